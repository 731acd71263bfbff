package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/sandbox"
	"github.com/aceworks/ace/pkg/workspace"
)

// runGit times what ace's git does on a working copy of the standard repository once its agent is done — the
// commit of what it left (a new file, a changed one), the count of commits, the handover's log, status and diff,
// the push to the file:// remote — three ways, taking turns each round: as ace runs it (each command in a box of
// its own, the push a pack built there), as it runs where boxes do not work (the same commands on the host), and
// plain: the same git commands in the copy as the user, `git push origin` — what ace did before the working copy
// was hostile ground, but for the push, which was go-git's: on this repository go-git walks the remote's whole
// history before it sends a commit (over 25 minutes on a loaded machine), so git's own push stands in for it, and
// the difference to plain is an upper bound of what the guards cost.
func runGit(ctx context.Context, root, remote string, n int) error {
	boxed, err := workspace.New(workspace.Options{Root: root})
	if err != nil {
		return err
	}
	if _, err := sandbox.Detect(ctx); err != nil {
		return fmt.Errorf("boxes do not work here, so there is no boxed figure to measure: %w", err)
	}
	unboxed, err := workspace.New(workspace.Options{Root: root, Boxes: sandbox.Refusing(errors.New("measured unboxed"))})
	if err != nil {
		return err
	}
	spec := func(issue int) workspace.Spec {
		return workspace.Spec{Repo: "bench/repo", Issue: issue, RemoteURL: "file://" + remote, BaseBranch: "main",
			Branch: fmt.Sprintf("ace/%d-x", issue)}
	}
	copies := map[string]*workspace.Workspace{}
	const (
		inBox  = "ace, each command boxed (as it runs)"
		noBox  = "ace, where boxes do not work"
		before = "plain git as the user (ace before)"
	)
	for i, name := range []string{inBox, noBox, before} {
		ws, err := boxed.Prepare(ctx, spec(2000+i))
		if err != nil {
			return err
		}
		copies[name] = ws
	}
	if copies[noBox], err = unboxed.Open(ctx, "bench/repo", 2001); err != nil {
		return err
	}
	methods := []method{
		{inBox, func(i int) error { return aceRunGit(ctx, copies[inBox], i) }},
		{noBox, func(i int) error { return aceRunGit(ctx, copies[noBox], i) }},
		{before, func(i int) error { return plainRunGit(ctx, copies[before], i) }},
	}
	times, cpus, err := measure(methods, n)
	if err != nil {
		return err
	}
	table("a run's git", methods, times, cpus, n, 3)
	extra := func(ds map[string][]time.Duration) time.Duration { return median(ds[inBox]) - median(ds[before]) }
	fmt.Printf("\nthe guards cost a run %+.0f ms wall, %+.0f ms cpu (boxed vs before); %+.0f ms wall unboxed\n",
		float64(extra(times).Milliseconds()), float64(extra(cpus).Milliseconds()),
		float64((median(times[noBox]) - median(times[before])).Milliseconds()))
	return nil
}

// change leaves what an agent would for ace to commit: a new file and a changed one.
func change(dir string, i int) error {
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("left-%d.txt", i)), []byte(fmt.Sprintf("round %d\n", i)), 0o644); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, "pkg0", "sub0", "f0.go"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = fmt.Fprintf(f, "// round %d\n", i)
	return err
}

// aceRunGit is a run's git as ace does it.
func aceRunGit(ctx context.Context, ws *workspace.Workspace, i int) error {
	if err := change(ws.Dir, i); err != nil {
		return err
	}
	if _, _, err := ws.CommitAll(ctx, fmt.Sprintf("round %d", i)); err != nil {
		return err
	}
	if _, err := ws.CommitsAhead(ctx); err != nil {
		return err
	}
	if _, err := ws.SoFar(ctx); err != nil {
		return err
	}
	return ws.Push(ctx)
}

// plainRunGit is the same as ace did it before: git in the copy as the user, pushing the copy's origin.
func plainRunGit(ctx context.Context, ws *workspace.Workspace, i int) error {
	if err := change(ws.Dir, i); err != nil {
		return err
	}
	for _, args := range [][]string{
		{"status", "--porcelain", "--untracked-files=all"},
		{"add", "-A"},
		{"-c", "user.name=ace", "-c", "user.email=ace@localhost", "commit", "-q", "--no-verify", "-m", fmt.Sprintf("round %d", i)},
		{"rev-parse", "HEAD"},
		{"rev-list", "--count", ws.BaseCommit + "..HEAD"},
		{"log", "--oneline", "--no-decorate", ws.BaseCommit + "..HEAD"},
		{"--no-optional-locks", "status", "--short", "--untracked-files=all"},
		{"diff", "--no-color", "--no-ext-diff", "--stat", ws.BaseCommit, "--"},
		{"diff", "--no-color", "--no-ext-diff", ws.BaseCommit, "--"},
	} {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = ws.Dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, out)
		}
	}
	push := exec.CommandContext(ctx, "git", "push", "-q", "origin", ws.Branch)
	push.Dir = ws.Dir
	if out, err := push.CombinedOutput(); err != nil {
		return fmt.Errorf("git push: %w: %s", err, out)
	}
	return nil
}
