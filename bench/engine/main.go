// Command engine benchmarks ace's engine (the "Engine" issue, its Benchmark section): runs advancing as River
// jobs, with nothing driven by hand. This process is `ace poll` — service.Open with dispatch, StartQueue — over
// a world of its own: a bare git remote, a local tracker, the store and River queue on it, a private tmux server
// and the scripted fake agent (this binary run again). Figures are printed beside their baselines and goals,
// all measured in the same run:
//
//   - 1: stuck agents hold up nobody. One healthy issue alone, then -issues labelled at once, the oldest -stuck
//     of them with an agent that never shows its ready marker (tmux.startup_timeout 60s), poll.max_concurrent =
//     -issues: the time until every healthy issue has its pull request ÷ the time of the one alone (goal ≤ 1.5×).
//   - 2: dispatch latency, from the dispatch pass that first lists an issue to its agent's tmux session started.
//   - 3: CPU and RSS of this process per live run over figure 1's phase, then with only the stuck runs left.
//   - 4: -queued labelled issues at poll.max_concurrent 4, agents that finish at once: every issue gets one run,
//     one session, one pull request and one status comment, oldest first, never more than 4 at a time.
//
// A warm-up issue comes first (it fills the git mirror), so the baseline is not charged for it.
//
//	go run ./bench/engine                  # 20 issues, 5 stuck; then 200 queued
//	go run ./bench/engine -skip-queued     # figures 1–3 only
//	go run ./bench/engine -issues 10 -stuck 2 -queued 40
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/aceworks/ace/pkg/cli"
)

func main() {
	// The panes run this binary again: as the secret-injecting launcher, then as the fake agent.
	if code, ok := cli.Child(os.Args[1:]); ok {
		os.Exit(code)
	}
	var o options
	flag.IntVar(&o.issues, "issues", 20, "issues labelled at once in figure 1 (also its poll.max_concurrent)")
	flag.IntVar(&o.stuck, "stuck", 5, "how many of them get an agent stuck at startup")
	flag.DurationVar(&o.work, "work", 2*time.Second, "how long a healthy agent works on its issue in figure 1")
	flag.IntVar(&o.queued, "queued", 200, "issues queued at once in figure 4")
	flag.IntVar(&o.queuedConcurrent, "queued-concurrent", 4, "poll.max_concurrent of figure 4")
	flag.BoolVar(&o.skipQueued, "skip-queued", false, "skip figure 4")
	flag.DurationVar(&o.steady, "steady", 5*time.Second, "how long to measure the stuck runs alone")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up on a phase after this long")
	flag.BoolVar(&o.keep, "keep", false, "keep the benchmark's directory (logs, store, tracker) and print where")
	flag.BoolVar(&o.keepalive, "tmux-keepalive", false,
		"hold an idle session in each world's tmux server, so that it never exits between agents")
	flag.Parse()
	if err := o.check(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if err := run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type options struct {
	issues, stuck            int
	work                     time.Duration
	queued, queuedConcurrent int
	skipQueued               bool
	steady, timeout          time.Duration
	keep, keepalive          bool
}

func (o options) check() error {
	switch {
	case o.issues < 1:
		return errors.New("-issues must be at least 1")
	case o.stuck < 0 || o.stuck >= o.issues:
		return fmt.Errorf("-stuck must be between 0 and %d (-issues − 1)", o.issues-1)
	case o.work < 0:
		return errors.New("-work must not be negative")
	case !o.skipQueued && (o.queued < 1 || o.queuedConcurrent < 1):
		return errors.New("-queued and -queued-concurrent must be at least 1 (or -skip-queued)")
	case o.steady < 0 || o.timeout <= 0:
		return errors.New("-steady must not be negative and -timeout must be positive")
	}
	return nil
}

func run(ctx context.Context, o options) error {
	for _, tool := range []string{"git", "tmux"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("the benchmark needs %s", tool)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "ace-bench-engine-")
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Printf("benchmark directory (kept): %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	fmt.Printf("ace engine benchmark on %d CPUs: River queue on SQLite, real tmux, git and local tracker, the fake agent\n",
		runtime.NumCPU())
	fmt.Printf("poll.interval 200ms, monitor.interval 200ms, tmux.startup_timeout 60s; an idle tmux session held: %v\n", o.keepalive)
	if err := stuckPhase(ctx, filepath.Join(dir, "stuck"), exe, o); err != nil {
		return err
	}
	if o.skipQueued {
		return nil
	}
	return queuedPhase(ctx, filepath.Join(dir, "queued"), exe, o)
}

// healthyScript works for about d (two busy spells), commits a file and reports done.
func healthyScript(d time.Duration) string {
	half := (d / 2).String()
	return "busy " + half + "\nsay Working on the task\nwrite work.txt done\\n\nbusy " + half + "\n" +
		"sh git add work.txt && git commit -q -m \"bench work\"\ndone Wrote work.txt.\n"
}

// fastScript commits a file and reports done at once.
const fastScript = "write work.txt done\\n\nsh git add work.txt && git commit -q -m \"bench work\"\ndone Wrote work.txt.\n"

func secs(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }

func mib(kib int64) string { return fmt.Sprintf("%.1f MiB", float64(kib)/1024) }

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

// printRetries lists the steps that failed and were tried again after a backoff, grouped by step and error.
func printRetries(rs []retry) {
	if len(rs) == 0 {
		return
	}
	type key struct{ step, msg string }
	count := map[key]int{}
	var keys []key
	for _, r := range rs {
		k := key{r.step, r.msg}
		if count[k] == 0 {
			keys = append(keys, k)
		}
		count[k]++
	}
	fmt.Printf("   step retries (each waits a backoff of 2s or more): %d\n", len(rs))
	for _, k := range keys[:min(len(keys), 4)] {
		msg := k.msg
		if len(msg) > 140 {
			msg = msg[:140] + "…"
		}
		fmt.Printf("     %d× %s: %s\n", count[k], k.step, msg)
	}
}

func printWarnings(w *world) {
	n, first := w.warnings.Snapshot()
	fmt.Printf("   engine warnings and errors logged: %d\n", n)
	for _, m := range first {
		fmt.Printf("     %s\n", m)
	}
}
