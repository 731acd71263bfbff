// Command sandbox benchmarks what the per-run box costs (issue "each agent in a box of its own"): start-up time
// and memory of a command started boxed (bwrap → ace __box with its proxy forwarder → the command), and boxed
// with its file attempts recorded (the command started under a seccomp filter, its path-taking calls each a
// round trip to ace __box's notifier), beside the same command started plainly, in the same run:
//
//	go run ./bench/sandbox            # 20 runs of each
//	go run ./bench/sandbox -n 50
//	g=$(readlink -f "$(command -v gemini)")   # and an agent CLI's start-up, its install directory shown read-only
//	go run ./bench/sandbox -cmd "$g --version" -ro "${g%/node_modules/*}/node_modules"
//
// Start-up is the wall time from start to exit of a command that does nothing (`git --version`, `node -e 0`
// when node is installed, each -cmd), median and 90th percentile, the ways taking turns so that load from other
// processes falls on all alike. Memory is measured on a live process (git cat-file --batch-check, an idle
// node) once it has answered: the sum over its process tree of each process's peak RSS (VmHWM) and of its
// proportional share (PSS, shared pages divided among their users: closer to what one more run costs).
// The box is a production one: proxy socket mounted, forwarder listening, egress proxy serving on the host.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aceworks/ace/pkg/cli"
	"github.com/aceworks/ace/pkg/egress"
	"github.com/aceworks/ace/pkg/sandbox"
)

func main() {
	if code, ok := cli.Child(os.Args[1:]); ok {
		os.Exit(code) // this binary is also ace inside the box
	}
	n := flag.Int("n", 20, "runs of each command each way")
	self := flag.String("self", "", "the executable run inside as `ace __box` (default: this one, which is ace)")
	var extra [][]string
	var ro []string
	flag.Func("cmd", "a further `command` line to time the start-up of (split at spaces)", func(v string) error {
		extra = append(extra, strings.Fields(v))
		return nil
	})
	flag.Func("ro", "a `directory` the box shows read-only (a -cmd's install directory)", func(v string) error {
		ro = append(ro, v)
		return nil
	})
	flag.Parse()
	if err := run(context.Background(), *n, *self, extra, ro); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// setup is a box's world: a working copy (a git repository), a home, the egress proxy on its socket and the
// report socket, and what boxes reported there (a command that keeps to its box: nothing).
type setup struct {
	host    *sandbox.Host
	spec    sandbox.Spec
	reports string

	mu       sync.Mutex
	recorded []sandbox.Attempt
}

func newSetup(ctx context.Context, tmp, self string) (*setup, error) {
	h, err := sandbox.Detect(ctx)
	if err != nil {
		return nil, err
	}
	wc, home, run := filepath.Join(tmp, "wc"), filepath.Join(tmp, "home"), filepath.Join(tmp, "run")
	for _, d := range []string{wc, home, run} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "--allow-empty", "-m", "x"}} {
		if out, err := exec.CommandContext(ctx, "git", append([]string{"-C", wc}, args...)...).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("git %s: %w: %s", args[0], err, out)
		}
	}
	sock := filepath.Join(run, "egress.sock")
	ln, err := egress.ListenUnix(sock)
	if err != nil {
		return nil, err
	}
	p, err := egress.New(egress.Options{})
	if err != nil {
		return nil, err
	}
	go p.Serve(ctx, ln)
	reports := filepath.Join(run, sandbox.ReportSocketName)
	rln, err := egress.ListenUnix(reports)
	if err != nil {
		return nil, err
	}
	s := &setup{host: h, spec: sandbox.Spec{WorkDir: wc, Home: home, ProxySocket: sock, Self: self,
		Hide: []string{tmp}, Env: map[string]string{"ANTHROPIC_API_KEY": "sk-bench"}}, reports: reports}
	go sandbox.ServeReports(ctx, rln, func(r sandbox.Report) {
		s.mu.Lock()
		s.recorded = append(s.recorded, r.Attempts...)
		s.mu.Unlock()
	})
	return s, nil
}

// The ways a command is started.
const (
	plain     = iota // no box
	bwrapOnly        // the box's bwrap argv running the command itself, without ace __box: bwrap's share
	boxed            // bwrap → ace __box (forwarder up) → the command
	recorded         // the same, the command's file attempts recorded: what a run gets
)

var wayNames = []string{"unboxed", "bwrap only", "boxed", "recorded"}

// command is argv started one way, in the working copy, with the box's environment every way.
func (s *setup) command(ctx context.Context, way int, argv []string) (*exec.Cmd, error) {
	spec := s.spec
	if way == recorded {
		spec.ReportSocket = s.reports
	}
	box, err := s.host.Wrap(spec, argv)
	if err != nil {
		return nil, err
	}
	switch way {
	case boxed, recorded:
		return box.Command(ctx), nil
	case bwrapOnly:
		i := slices.Index(box.Argv, sandbox.ChildArg) - 1 // bwrap's argv ends "-- SelfPath __box … -- argv"
		box.Argv = append(box.Argv[:i:i], argv...)
		return box.Command(ctx), nil
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = s.spec.WorkDir, box.Environ()
	return cmd, nil
}

func run(ctx context.Context, n int, self string, extra [][]string, ro []string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tmp, err := os.MkdirTemp("", "ace-bench-box-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	s, err := newSetup(ctx, tmp, self)
	if err != nil {
		return err
	}
	s.spec.ReadOnly = ro
	fmt.Printf("%s; %d runs each way, taking turns\n\n", s.host, n)
	starts := [][]string{{"git", "--version"}}
	lives := []live{{"git cat-file --batch-check", []string{"git", "cat-file", "--batch-check"}, "HEAD\n"}}
	if _, err := exec.LookPath("node"); err == nil {
		starts = append(starts, []string{"node", "-e", "0"})
		lives = append(lives, live{"node (idle, after start-up)", []string{"node", "-e", "console.log('up'); process.stdin.resume()"}, ""})
	} else {
		fmt.Println("(node is not installed: its rows are left out)")
	}
	starts = append(starts, extra...)
	fmt.Printf("%-20s", "start-up, wall ms")
	for _, w := range wayNames {
		fmt.Printf(" %20s", w+" p50/p90")
	}
	fmt.Printf(" %9s %6s %10s\n", "boxed +", "ratio", "recorder +")
	for _, argv := range starts {
		ds := make([][]time.Duration, len(wayNames))
		for i := -1; i < n; i++ { // run -1 warms the page cache and is not counted
			for way := range wayNames {
				d, err := s.time(ctx, way, argv)
				if err != nil {
					return err
				}
				if i >= 0 {
					ds[way] = append(ds[way], d)
				}
			}
		}
		fmt.Printf("%-20s", strings.Join(append([]string{filepath.Base(argv[0])}, argv[1:]...), " "))
		for way := range wayNames {
			fmt.Printf(" %11.1f / %6.1f", ms(pct(ds[way], 50)), ms(pct(ds[way], 90)))
		}
		fmt.Printf(" %+9.1f %5.1f× %+10.1f\n", ms(pct(ds[boxed], 50)-pct(ds[plain], 50)), float64(pct(ds[boxed], 50))/float64(pct(ds[plain], 50)),
			ms(pct(ds[recorded], 50)-pct(ds[boxed], 50)))
	}
	fmt.Printf("\n%-28s %-10s %9s %9s %9s   %s\n", "memory of a live process", "", "peak RSS", "PSS", "anon", "(MiB, summed over the process tree; each process: peak RSS/PSS/anon)")
	for _, l := range lives {
		for _, way := range []int{plain, boxed, recorded} {
			m, err := s.memory(ctx, way, l)
			if err != nil {
				return err
			}
			fmt.Printf("%-28s %-10s %9.1f %9.1f %9.1f   %s\n", l.name, wayNames[way], mib(m.hwm), mib(m.pss), mib(m.anon), m.parts)
			l.name = ""
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Printf("\nfile attempts recorded: %d", len(s.recorded))
	for _, a := range s.recorded {
		fmt.Printf("\n  %s %s %s", a.Kind, a.Op, a.Path)
	}
	fmt.Println()
	return nil
}

func (s *setup) time(ctx context.Context, way int, argv []string) (time.Duration, error) {
	cmd, err := s.command(ctx, way, argv)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("%v (%s): %w: %s", argv, wayNames[way], err, out)
	}
	return time.Since(start), nil
}

func pct(ds []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)*p/100]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func mib(kb int64) float64       { return float64(kb) / 1024 }
