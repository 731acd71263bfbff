package workspace

import (
	"context"

	"github.com/aceworks/ace/pkg/untrusted"
)

// Tracked reports whether path (relative to the working copy) is a file git tracks: ace must never write over
// such a file, nor hide it with an exclude.
func (w *Workspace) Tracked(ctx context.Context, path string) (bool, error) {
	out, err := w.git(ctx, nil, "ls-files", "--", path)
	return out != "", err
}

// Unexclude takes patterns out of ace's exclude file again (a file ace wrote and excluded that the agent then
// made its own, and which must be committed with its work), and out of .git/info/exclude where an older ace
// put them.
func (w *Workspace) Unexclude(patterns ...string) error {
	if err := removeLines(untrusted.New(w.Dir), aceExclude, patterns); err != nil {
		return err
	}
	return removeLines(untrusted.New(w.Dir), legacyExclude, patterns)
}
