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
// takes no optional locks); no diff driver or textconv program of the copy's runs.
func (w *Workspace) SoFar(ctx context.Context) (SoFar, error) {
	s := SoFar{Base: w.BaseCommit}
	for _, q := range []struct {
		dst  *string
		args []string
	}{
		{&s.Commits, []string{"log", "--oneline", "--no-decorate", "HEAD", "^" + w.BaseCommit, "--"}},
		{&s.Status, []string{"status", "--short", "--untracked-files=all", "--ignore-submodules=dirty"}},
		{&s.Stat, []string{"diff", "--no-color", "--no-ext-diff", "--no-textconv", "--ignore-submodules=dirty", "--stat", w.BaseCommit, "--"}},
		{&s.Diff, []string{"diff", "--no-color", "--no-ext-diff", "--no-textconv", "--ignore-submodules=dirty", w.BaseCommit, "--"}},
	} {
		out, err := w.git(ctx, nil, q.args...)
		if err != nil {
			return SoFar{}, fmt.Errorf("read the work so far in %s: %w", w.Dir, err)
		}
		*q.dst = out
	}
	return s, nil
}
