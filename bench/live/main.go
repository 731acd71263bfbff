// Command live benchmarks ace's three runners side by side with a real agent CLI (the "live runner" issue, its
// item 5): "tmux" (the CLI's terminal UI, read from its screen), "exec" (headless, one process per turn under the
// supervisor `ace __headless`) and "live" (one conversation over the CLI's own protocol, held by `ace __live` in
// the run's tmux session). Every run is the same case, in a world of its own: the pinned CLI (claude of the newest
// set by default) against the scripted model server (pkg/modelserver), on a fresh HOME (realcli.MakeHome), with a
// fake GitHub and a bare git remote, in a loopback-only network and PID namespace (the benchmark re-executes
// itself under `unshare -rn`, pkg/netns), and ace as a process of its own, as `ace poll` runs. The model reads
// the task, asks a question (claude in tmux and live: its question tool, a menu; otherwise ace's .ace/QUESTION
// file), and once answered writes a file, commits and reports done. Figures, per runner, the runners taking
// turns so that load from other processes falls on all alike:
//
//   - answer → model: from the human's answer added as an issue comment (once ace has posted the question and
//     parked the run) to the model server receiving the first request that carries it, median and 90th
//     percentile. ace looks for answers every poll.interval, the same for every runner (-poll), which bounds it.
//   - ace CPU per run: user and system time of ace's process from the label to the pull request (getrusage: ace
//     runs as this binary and tells it when asked), beside ace idle, its CPU per second before the label, polling
//     with nothing to do (the baseline: a run that takes longer pays more of it).
//   - helper CPU per run: the own CPU of the runner's helper processes — the exec runner's supervisors, the live
//     runner's host — recorded by each when it exits (getrusage; they run as this binary too). Apart: the agent
//     CLI's CPU (its processes and the tools they ran, read from /proc every 100 ms) and the tmux server's.
//   - wall time from the label to the pull request.
//
// The load average is printed at the start and the end: the machine is shared; compare the runners, not runs.
//
//	go run ./bench/live                       # 5 runs of each runner, poll.interval 250ms
//	go run ./bench/live -n 10 -json live.json
//	go run ./bench/live -runners live,tmux -n 3 -keep
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/aceworks/ace/internal/realcli"
	"github.com/aceworks/ace/pkg/netns"
)

// envInside marks this benchmark re-executed inside its namespace.
const envInside = "ACE_BENCH_LIVE_NETNS"

func main() {
	// This binary is also ace (the ace process of each world), its tmux launcher, supervisor and live host.
	if code, ok := child(os.Args[1:]); ok {
		os.Exit(code)
	}
	var o options
	flag.IntVar(&o.n, "n", 5, "runs of each runner")
	flag.StringVar(&o.runners, "runners", "tmux,exec,live", "the runners to measure, comma-separated")
	flag.StringVar(&o.cli, "cli", "claude", "the agent CLI: claude, codex or gemini (its pinned install)")
	flag.StringVar(&o.set, "set", "newest", "the pinned set of CLI versions (tools/agent-clis/SET)")
	flag.DurationVar(&o.poll, "poll", 250*time.Millisecond, "poll.interval (and monitor.interval) of every runner")
	flag.DurationVar(&o.idle, "idle", 3*time.Second, "how long ace's idle CPU is measured before each label")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "give up on a run after this long")
	flag.StringVar(&o.json, "json", "", "also write the figures as JSON to `file`")
	flag.BoolVar(&o.keep, "keep", false, "keep every run's directory (ace's log, store, transcripts) and print where")
	flag.Parse()
	if err := o.check(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	var err error
	if os.Getenv(envInside) == "" {
		err = enter(ctx)
	} else {
		err = run(ctx, o)
	}
	stop()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		os.Exit(exit.ExitCode()) // the benchmark in the namespace said why
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type options struct {
	n                   int
	runners, cli, set   string
	poll, idle, timeout time.Duration
	json                string
	keep                bool
}

var allRunners = []string{"tmux", "exec", "live"}

func (o options) runnerList() []string { return strings.Split(o.runners, ",") }

func (o options) check() error {
	switch {
	case o.n < 1:
		return errors.New("-n must be at least 1")
	case o.poll <= 0 || o.idle <= 0 || o.timeout <= 0:
		return errors.New("-poll, -idle and -timeout must be positive")
	case !slices.Contains([]string{"claude", "codex", "gemini"}, o.cli):
		return fmt.Errorf("-cli %q: want claude, codex or gemini", o.cli)
	}
	for _, r := range o.runnerList() {
		if !slices.Contains(allRunners, r) {
			return fmt.Errorf("-runners: unknown runner %q (want tmux, exec, live)", r)
		}
	}
	return nil
}

// enter runs this benchmark again, with the same flags, in a namespace of its own whose only network is
// loopback (and whose processes all end with it): the CLI reaches the model server on 127.0.0.1 and nothing
// else. An interrupt is passed on, so that the benchmark inside ends its worlds.
func enter(ctx context.Context) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd, err := netns.Command(ctx, exe, os.Args[1:]...)
	if err != nil {
		return fmt.Errorf("%w: the benchmark runs the CLI in a loopback-only network namespace", err)
	}
	cmd.Env = append(os.Environ(), envInside+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 2 * time.Minute
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("the benchmark in its namespace: %w", err)
	}
	return nil
}

// run is the benchmark inside its namespace.
func run(ctx context.Context, o options) error {
	if err := netns.LoopbackUp(); err != nil {
		return fmt.Errorf("bring up lo in the namespace: %w", err)
	}
	for _, tool := range []string{"git", "tmux"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("the benchmark needs %s: %w", tool, err)
		}
	}
	c, err := realcli.PinnedIn(o.cli, o.set)
	if err != nil {
		return err
	}
	if _, err := os.Stat(c.Bin); err != nil {
		return fmt.Errorf("%s %s is not installed (npm ci --prefix tools/agent-clis/%s): %w", c.Name, c.Version, o.set, err)
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "ace-bench-live-")
	if err != nil {
		return err
	}
	loadStart := loadavg()
	fmt.Printf("ace's runners with %s %s (pinned set %s) against the scripted model server, loopback-only namespace, "+
		"fresh HOME per run, on %d CPUs\n", c.Name, c.Version, o.set, runtime.NumCPU())
	fmt.Printf("poll.interval = monitor.interval = %s for every runner; %d runs each, taking turns; load average %s\n\n",
		o.poll, o.n, loadStart)

	runners := o.runnerList()
	results := map[string][]runResult{}
	kept := o.keep
	defer func() {
		if kept {
			fmt.Printf("\nrun directories kept (ace's log and store, the model's requests, transcripts): %s\n", dir)
		} else {
			_ = os.RemoveAll(dir)
		}
	}()
	for i := range o.n {
		for k := range runners {
			runner := runners[(i+k)%len(runners)]
			if ctx.Err() != nil {
				kept = true
				return ctx.Err()
			}
			rdir := filepath.Join(dir, fmt.Sprintf("%02d-%s", i+1, runner))
			res, failed := runOnce(ctx, rdir, exe, runner, c, o)
			results[runner] = append(results[runner], res)
			printRun(i+1, res)
			if failed {
				kept = true
			} else if !o.keep {
				_ = os.RemoveAll(rdir)
			}
		}
	}
	f := figuresOf(c, o, runners, results, loadStart, loadavg())
	printTable(f)
	if o.json != "" {
		if err := writeJSON(o.json, f); err != nil {
			return err
		}
		fmt.Printf("figures written to %s\n", o.json)
	}
	for _, r := range f.Runners {
		if r.Runs == 0 {
			return fmt.Errorf("no %s run succeeded", r.Runner)
		}
	}
	return nil
}

func printRun(rep int, r runResult) {
	if r.err != nil {
		fmt.Printf("run %d %-4s FAILED: %v\n", rep, r.runner, r.err)
		return
	}
	fmt.Printf("run %d %-4s answer→model %s · ace %s (idle %s/s, children %s) · helpers %s (%d) · "+
		"CLI %s (%d processes) · tmux server %s · question after %s · PR after %s\n",
		rep, r.runner, ms(r.answer), ms(r.ace), ms(r.aceIdle), ms(r.aceChildren), ms(r.helper), r.helpers,
		ms(r.cli), r.clis, ms(r.tmux), secs(r.asked), secs(r.wall))
}

func ms(d time.Duration) string { return fmt.Sprintf("%dms", d.Milliseconds()) }

func secs(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }
