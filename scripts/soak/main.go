// Command soak runs the real-CLI tests round after round under load and prints each case's pass rate and slowest
// run: a case that fails one time in twenty shows here, not in CI.
//
//	go run ./scripts/soak -n 20                                  # every real-CLI case, 20 rounds
//	go run ./scripts/soak -n 5 -run '^TestRealCLI$/^issue$/gemini' ./e2e
//
// Each round is one `go test -json -count=1` of the packages whose tests run a real CLI (those importing
// internal/realcli, or the ones named), beside -load busy loops, each in a session of its own as the tmux servers
// of a full test run are (the scheduler shares the CPU between sessions first). A case is a test that held a
// real-CLI slot (internal/realcli.Slot); its time is its own, the wait for the slot left out. The output of each
// failed case is kept under -logs.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"
)

func main() {
	n := flag.Int("n", 5, "rounds")
	run := flag.String("run", "", "go test -run pattern (default: every test of the packages)")
	load := flag.Int("load", runtime.NumCPU(), "busy loops beside the tests, each in a session of its own")
	timeout := flag.Duration("timeout", 30*time.Minute, "go test -timeout of each round")
	logs := flag.String("logs", "", "where the output of failed cases goes (default: a new temporary directory)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: go run ./scripts/soak [flags] [packages]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := soak(ctx, *n, *run, *load, *timeout, *logs, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

func soak(ctx context.Context, rounds int, run string, load int, timeout time.Duration, logs string, pkgs []string) error {
	if len(pkgs) == 0 {
		var err error
		if pkgs, err = realCLIPackages(ctx); err != nil {
			return err
		}
	}
	if logs == "" {
		var err error
		if logs, err = os.MkdirTemp("", "ace-soak-"); err != nil {
			return err
		}
	}
	hogs, err := startHogs(load)
	defer endHogs(hogs)
	if err != nil {
		return err
	}
	fmt.Printf("soak: %d rounds of %s (-run %q) beside %d busy loops; failed cases' output in %s\n",
		rounds, strings.Join(pkgs, " "), run, load, logs)
	all := map[string]*stats{}
	for i := 1; i <= rounds && ctx.Err() == nil; i++ {
		start := time.Now()
		res, err := round(ctx, run, timeout, pkgs, filepath.Join(logs, fmt.Sprintf("round-%02d", i)))
		if err != nil {
			return err
		}
		var failed []string
		for name, r := range res {
			s := all[name]
			if s == nil {
				s = &stats{}
				all[name] = s
			}
			s.add(r)
			if !r.pass {
				failed = append(failed, name)
			}
		}
		sort.Strings(failed)
		fmt.Printf("round %d/%d: %d cases in %s; failed: %v\n", i, rounds, len(res), time.Since(start).Round(time.Second), failed)
	}
	printStats(os.Stdout, all)
	return nil
}

// realCLIPackages are the packages whose test binaries link internal/realcli (directly or through
// internal/livetest).
func realCLIPackages(ctx context.Context) ([]string, error) {
	out, err := exec.CommandContext(ctx, "go", "list", "-test", "-f", `{{.ImportPath}} {{join .Deps " "}}`, "./...").Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	var pkgs []string
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		// The test binary's main package, "<pkg>.test", depends on everything its tests link.
		if len(f) > 1 && strings.HasSuffix(f[0], ".test") &&
			slices.ContainsFunc(f[1:], func(s string) bool { return strings.HasSuffix(s, "/internal/realcli") }) {
			pkgs = append(pkgs, strings.TrimSuffix(f[0], ".test"))
		}
	}
	if len(pkgs) == 0 {
		return nil, errors.New("no package's tests import internal/realcli: run it in the ace module")
	}
	return pkgs, nil
}

// result is one case's outcome in one round.
type result struct {
	pass bool
	took time.Duration // without the wait for a slot
}

type stats struct {
	runs, passed int
	slowest      time.Duration
}

func (s *stats) add(r result) {
	s.runs++
	if r.pass {
		s.passed++
	}
	s.slowest = max(s.slowest, r.took)
}

// event is a line of go test -json (test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// slotLine is what internal/realcli.Slot logs once it holds a slot.
var slotLine = regexp.MustCompile(`realcli: slot \d+ of \d+ after ([0-9.]+[a-zµ]+)`)

// round runs the tests once and returns the cases' results, named package.Test; each failed case's output goes
// to a file under dir.
func round(ctx context.Context, run string, timeout time.Duration, pkgs []string, dir string) (map[string]result, error) {
	args := []string{"test", "-json", "-count=1", "-timeout", timeout.String()}
	if run != "" {
		args = append(args, "-run", run)
	}
	cmd := exec.CommandContext(ctx, "go", append(args, pkgs...)...)
	cmd.Stderr = os.Stderr
	// Interrupted, the round ends with every test binary go test started: they are in its process group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	type seen struct {
		out    strings.Builder
		wait   time.Duration
		slot   bool
		done   bool
		pass   bool
		took   time.Duration
		parent bool
	}
	tests := map[string]*seen{}
	get := func(pkg, test string) *seen {
		k := pkg + "." + test
		if tests[k] == nil {
			tests[k] = &seen{}
		}
		return tests[k]
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var ev event
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Test == "" {
			continue
		}
		s := get(ev.Package, ev.Test)
		switch ev.Action {
		case "output":
			s.out.WriteString(ev.Output)
			if m := slotLine.FindStringSubmatch(ev.Output); m != nil {
				s.slot = true
				s.wait, _ = time.ParseDuration(m[1])
			}
		case "pass", "fail":
			s.done, s.pass = true, ev.Action == "pass"
			s.took = time.Duration(ev.Elapsed*float64(time.Second)) - s.wait
			if s.slot {
				fmt.Printf("  %s %s.%s %.1fs\n", strings.ToUpper(ev.Action), ev.Package, ev.Test, s.took.Seconds())
			}
		}
		// Every name above it is a parent (a subtest's own name may hold a "/": TestRealCLI/issue's "gemini@0.61.0/tmux/question").
		for i := strings.Index(ev.Test, "/"); i > 0; i = next(ev.Test, i) {
			get(ev.Package, ev.Test[:i]).parent = true
		}
	}
	werr := cmd.Wait()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	res := map[string]result{}
	for name, s := range tests {
		// A failed test counts even without a slot (it may have failed before taking one); a parent only
		// sums its subtests.
		if s.parent || !s.done || !s.slot && s.pass {
			continue
		}
		res[name] = result{pass: s.pass, took: s.took}
		if !s.pass {
			if err := writeLog(dir, name, s.out.String()); err != nil {
				return nil, err
			}
		}
	}
	var exit *exec.ExitError
	if werr != nil && !errors.As(werr, &exit) {
		return nil, fmt.Errorf("go test: %w", werr)
	}
	if werr != nil && len(res) == 0 {
		return nil, fmt.Errorf("go test failed and ran no case: %w", werr)
	}
	return res, nil
}

// next is the index of the "/" after the one at i in name, or -1.
func next(name string, i int) int {
	j := strings.Index(name[i+1:], "/")
	if j < 0 {
		return -1
	}
	return i + 1 + j
}

func writeLog(dir, name, out string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	file := strings.NewReplacer("/", "_", " ", "_").Replace(name) + ".log"
	return os.WriteFile(filepath.Join(dir, file), []byte(out), 0o644)
}

// printStats writes each case's pass rate and slowest run, the least reliable first.
func printStats(w io.Writer, all map[string]*stats) {
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		a, b := all[names[i]], all[names[j]]
		ra, rb := float64(a.passed)/float64(a.runs), float64(b.passed)/float64(b.runs)
		if ra != rb {
			return ra < rb
		}
		return names[i] < names[j]
	})
	fmt.Fprintf(w, "\n%-8s %6s %9s  %s\n", "passed", "rate", "slowest", "case")
	for _, n := range names {
		s := all[n]
		fmt.Fprintf(w, "%3d/%-4d %5.0f%% %8.1fs  %s\n", s.passed, s.runs, 100*float64(s.passed)/float64(s.runs), s.slowest.Seconds(), n)
	}
}

// startHogs starts n busy loops, each in a session of its own.
func startHogs(n int) ([]*exec.Cmd, error) {
	var hogs []*exec.Cmd
	for range n {
		// A loop ends itself once the soak is gone (killed, it runs no cleanup).
		cmd := exec.Command("sh", "-c", fmt.Sprintf("while kill -0 %d 2>/dev/null; do :; done", os.Getpid()))
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			return hogs, fmt.Errorf("start a busy loop: %w", err)
		}
		hogs = append(hogs, cmd)
	}
	return hogs, nil
}

// endHogs kills the busy loops by PID and waits for them.
func endHogs(hogs []*exec.Cmd) {
	for _, h := range hogs {
		_ = h.Process.Kill()
		_ = h.Wait()
	}
}
