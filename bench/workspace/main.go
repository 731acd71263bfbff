// Command workspace benchmarks per-issue working-copy provisioning on the standard repository of
// BENCHMARKS.md, printing ace's figure beside the baselines measured in the same run:
//
//	go run ./bench/workspace -make-repo ../shared/bench/make-repo
//
// It times (median of -n runs, provisioning only): a full `git clone --no-local`, `git worktree add` from a
// bare mirror, `git clone --shared` from the mirror, and ace's Prepare of a 2nd+ working copy of the same repo
// (mirror fetch included).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"time"

	"github.com/aceworks/ace/pkg/workspace"
)

func main() {
	makeRepo := flag.String("make-repo", "", "path of the make-repo script (BENCHMARKS.md)")
	n := flag.Int("n", 3, "runs per method (the median is reported)")
	flag.Parse()
	if *makeRepo == "" {
		fmt.Fprintln(os.Stderr, "usage: go run ./bench/workspace -make-repo PATH/TO/make-repo")
		os.Exit(2)
	}
	if err := run(*makeRepo, *n); err != nil {
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

func median(f func(i int) error, n int) (time.Duration, error) {
	var ds []time.Duration
	for i := 0; i < n; i++ {
		start := time.Now()
		if err := f(i); err != nil {
			return 0, err
		}
		ds = append(ds, time.Since(start))
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2], nil
}

func run(makeRepo string, n int) error {
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
	results := map[string]time.Duration{}
	methods := []struct {
		name string
		f    func(i int) error
	}{
		{"git clone --no-local file://", func(i int) error {
			return sh(tmp, "git", "clone", "-q", "--no-local", "file://"+remote, filepath.Join(tmp, fmt.Sprint("full", i)))
		}},
		{"git worktree add (from a bare mirror)", func(i int) error {
			return sh(mirror, "git", "worktree", "add", "-q", "-b", fmt.Sprint("wt", i), filepath.Join(tmp, fmt.Sprint("wt", i)), "main")
		}},
		{"git clone --shared (from the mirror)", func(i int) error {
			return sh(tmp, "git", "clone", "-q", "--shared", mirror, filepath.Join(tmp, fmt.Sprint("shared", i)))
		}},
	}
	for _, m := range methods {
		if results[m.name], err = median(m.f, n); err != nil {
			return err
		}
	}
	mgr, err := workspace.New(workspace.Options{Root: filepath.Join(tmp, "ace")})
	if err != nil {
		return err
	}
	ctx := context.Background()
	spec := func(i int) workspace.Spec {
		return workspace.Spec{Repo: "bench/repo", Issue: i + 1, RemoteURL: remote, BaseBranch: "main", Branch: fmt.Sprintf("ace/%d-x", i+1)}
	}
	first := time.Now()
	if _, err := mgr.Prepare(ctx, spec(1000)); err != nil { // creates the mirror
		return err
	}
	firstTook := time.Since(first)
	ace, err := median(func(i int) error { _, err := mgr.Prepare(ctx, spec(i)); return err }, n)
	if err != nil {
		return err
	}
	wt := results["git worktree add (from a bare mirror)"]
	full := results["git clone --no-local file://"]
	fmt.Printf("\n%-44s %8s\n", "method (median of "+fmt.Sprint(n)+")", "seconds")
	for _, m := range methods {
		fmt.Printf("%-44s %8.2f\n", m.name, results[m.name].Seconds())
	}
	fmt.Printf("%-44s %8.2f\n", "ace Prepare, 1st (creates the mirror)", firstTook.Seconds())
	fmt.Printf("%-44s %8.2f\n", "ace Prepare, 2nd+ (mirror fetch + clone)", ace.Seconds())
	fmt.Printf("\nace 2nd+ = %.2f× git worktree add (target ≤ 1.5×); %.1f× faster than a full clone (target ≥ 5×)\n",
		ace.Seconds()/wt.Seconds(), full.Seconds()/ace.Seconds())
	return nil
}
