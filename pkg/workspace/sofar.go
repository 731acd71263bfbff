package workspace

import (
	"context"
	"fmt"
)

// SoFar is what has been done in a working copy since its base: the commits on the branch, the working tree's
// state (what is not committed, new files included) and the diff of both against the base commit.
type SoFar struct {
	Base    string // the base commit
	Commits string // `git log --oneline` of the branch since the base, newest first
	Status  string // `git status --short`, untracked files listed one by one
	Stat    string // `git diff --stat` against the base
	Diff    string // `git diff` against the base: committed and uncommitted changes of tracked files
}

// SoFar reads what has been done in the working copy since its base. Nothing in it changes (git status
// takes no optional locks).
func (w *Workspace) SoFar(ctx context.Context) (SoFar, error) {
	s := SoFar{Base: w.BaseCommit}
	for _, q := range []struct {
		dst  *string
		args []string
	}{
		{&s.Commits, []string{"log", "--oneline", "--no-decorate", w.BaseCommit + "..HEAD"}},
		{&s.Status, []string{"--no-optional-locks", "status", "--short", "--untracked-files=all"}},
		{&s.Stat, []string{"diff", "--no-color", "--no-ext-diff", "--stat", w.BaseCommit, "--"}},
		{&s.Diff, []string{"diff", "--no-color", "--no-ext-diff", w.BaseCommit, "--"}},
	} {
		out, err := w.m.git(ctx, w.Dir, q.args...)
		if err != nil {
			return SoFar{}, fmt.Errorf("read the work so far in %s: %w", w.Dir, err)
		}
		*q.dst = out
	}
	return s, nil
}
