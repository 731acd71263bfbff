// Command workspace benchmarks per-issue working-copy provisioning on the standard repository of
// BENCHMARKS.md, printing ace's figures beside the baselines measured in the same run:
//
//	go run ./bench/workspace -make-repo PATH/TO/make-repo
//
// It times (median of -n rounds, provisioning only; wall time, and CPU time of the process and its children): a full `git clone --no-local file://`, `git worktree add`
// from a bare mirror, `git clone --shared` from the mirror, ace's Prepare of the 1st working copy of a
// repository (which creates its mirror) and of a 2nd+ one (mirror fetch included). ace reaches the remote
// through a file:// URL, as the full clone does. The methods take turns within each round, so that load from
// other processes on the machine falls on all of them alike, and each starts after a sync, so that none waits
// for the writes of the one before. Then it times what a run's git costs on a working copy once its agent is
// done, with ace's guards and without (rungit.go).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/aceworks/ace/pkg/procs"
	"github.com/aceworks/ace/pkg/workspace"
)

func main() {
	makeRepo := flag.String("make-repo", "", "path of the make-repo script (BENCHMARKS.md)")
	n := flag.Int("n", 3, "rounds (the median of each method is reported)")
	gitOnly := flag.Bool("git-only", false, "time only a run's git on a working copy, not provisioning")
	flag.Parse()
	if *makeRepo == "" {
		fmt.Fprintln(os.Stderr, "usage: go run ./bench/workspace -make-repo PATH/TO/make-repo")
		os.Exit(2)
	}
	if err := run(*makeRepo, *n, *gitOnly); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func sh(dir string, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	return cmd.Run()
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

type method struct {
	name string
	f    func(i int) error
}

func run(makeRepo string, n int, gitOnly bool) error {
	makeRepo, err := filepath.Abs(makeRepo)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "ace-bench-ws-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "src")
	fmt.Println("generating the benchmark repository …")
	if err := sh(tmp, makeRepo, src); err != nil {
		return err
	}
	remote := filepath.Join(tmp, "remote.git")
	if err := sh(tmp, "git", "clone", "-q", "--bare", src, remote); err != nil {
		return err
	}
	mirror := filepath.Join(tmp, "mirror.git")
	if err := sh(tmp, "git", "clone", "-q", "--mirror", remote, mirror); err != nil {
		return err
	}
	ctx := context.Background()
	spec := func(i int) workspace.Spec {
		return workspace.Spec{Repo: "bench/repo", Issue: i + 1, RemoteURL: "file://" + remote, BaseBranch: "main",
			Branch: fmt.Sprintf("ace/%d-x", i+1)}
	}
	manager := func(root string) (*workspace.Manager, error) { return workspace.New(workspace.Options{Root: root}) }
	// The 2nd+ copies share one root whose mirror exists before the first round.
	shared, err := manager(filepath.Join(tmp, "ace"))
	if err != nil {
		return err
	}
	if _, err := shared.Prepare(ctx, spec(1000)); err != nil {
		return err
	}
	const (
		full   = "git clone --no-local file://"
		wt     = "git worktree add (from a bare mirror)"
		clone  = "git clone --shared (from the mirror)"
		first  = "ace Prepare, 1st (creates the mirror)"
		second = "ace Prepare, 2nd+ (mirror fetch + clone)"
	)
	if gitOnly {
		return runGit(ctx, filepath.Join(tmp, "ace"), remote, n)
	}
	methods := []method{
		{full, func(i int) error {
			return sh(tmp, "git", "clone", "-q", "--no-local", "file://"+remote, filepath.Join(tmp, fmt.Sprint("full", i)))
		}},
		{wt, func(i int) error {
			return sh(mirror, "git", "worktree", "add", "-q", "-b", fmt.Sprint("wt", i), filepath.Join(tmp, fmt.Sprint("wt", i)), "main")
		}},
		{clone, func(i int) error {
			return sh(tmp, "git", "clone", "-q", "--shared", mirror, filepath.Join(tmp, fmt.Sprint("shared", i)))
		}},
		{first, func(i int) error {
			m, err := manager(filepath.Join(tmp, fmt.Sprint("ace-first", i)))
			if err != nil {
				return err
			}
			_, err = m.Prepare(ctx, spec(i))
			return err
		}},
		{second, func(i int) error { _, err := shared.Prepare(ctx, spec(i)); return err }},
	}
	times, cpus, err := measure(methods, n)
	if err != nil {
		return err
	}
	table("method", methods, times, cpus, n, 2)
	ratio := func(ds map[string][]time.Duration, a, b string) float64 {
		return median(ds[a]).Seconds() / median(ds[b]).Seconds()
	}
	fmt.Printf("\nace 1st  = %.2f× git clone (target ≤ 1.3×)         [cpu %.2f×]\n", ratio(times, first, full), ratio(cpus, first, full))
	fmt.Printf("ace 2nd+ = %.2f× git worktree add (target ≤ 1.2×)  [cpu %.2f×]; %.1f× faster than a full clone (target ≥ 5×)\n",
		ratio(times, second, wt), ratio(cpus, second, wt), 1/ratio(times, second, full))
	return runGit(ctx, filepath.Join(tmp, "ace"), remote, n)
}

// measure runs each method n rounds, the methods taking turns within a round, each after a sync (the previous
// method's writes are not this one's to wait for): the wall and CPU time of each round of each method.
func measure(methods []method, n int) (times, cpus map[string][]time.Duration, err error) {
	times, cpus = map[string][]time.Duration{}, map[string][]time.Duration{}
	for i := 0; i < n; i++ {
		for _, m := range methods {
			syscall.Sync()
			cpu0, start := procs.OwnCPU(), time.Now()
			if err := m.f(i); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", m.name, err)
			}
			times[m.name] = append(times[m.name], time.Since(start))
			cpus[m.name] = append(cpus[m.name], procs.OwnCPU()-cpu0)
		}
	}
	return times, cpus, nil
}

// table prints the medians of each method and the wall time of each round, with prec decimals.
func table(what string, methods []method, times, cpus map[string][]time.Duration, n, prec int) {
	fmt.Printf("\n%-42s %7s %7s   %s\n", what+" (median of "+fmt.Sprint(n)+" rounds)", "wall s", "cpu s", "wall s of each round")
	for _, m := range methods {
		fmt.Printf("%-42s %7.*f %7.*f  ", m.name, prec, median(times[m.name]).Seconds(), prec, median(cpus[m.name]).Seconds())
		for _, d := range times[m.name] {
			fmt.Printf(" %.*f", prec, d.Seconds())
		}
		fmt.Println()
	}
}
