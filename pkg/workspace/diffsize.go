package workspace

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// DiffSize is how much the run's branch changes against its base: files touched, and lines added plus lines
// deleted (a binary file counts one line). Best-of-N compares attempts by it.
type DiffSize struct {
	Files, Lines int
}

// DiffSize counts the committed change of the run's branch against the base commit (git diff --numstat; no diff
// driver or textconv program of the copy's runs).
func (w *Workspace) DiffSize(ctx context.Context) (DiffSize, error) {
	out, err := w.git(ctx, nil, "diff", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames", "--numstat",
		w.BaseCommit, "refs/heads/"+w.Branch, "--")
	if err != nil {
		return DiffSize{}, fmt.Errorf("count the change of %s: %w", w.Branch, err)
	}
	var d DiffSize
	for line := range strings.SplitSeq(out, "\n") {
		f := strings.SplitN(line, "\t", 3)
		if len(f) < 3 {
			continue
		}
		d.Files++
		add, aerr := strconv.Atoi(f[0])
		del, derr := strconv.Atoi(f[1])
		if aerr != nil || derr != nil { // "-\t-": binary
			d.Lines++
			continue
		}
		d.Lines += add + del
	}
	return d, nil
}
