package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aceworks/ace/pkg/atomicfile"
)

// Tracked reports whether path (relative to the working copy) is a file git tracks: ace must never write over
// such a file, nor hide it with an exclude.
func (w *Workspace) Tracked(ctx context.Context, path string) (bool, error) {
	out, err := w.m.git(ctx, w.Dir, "ls-files", "--", path)
	return out != "", err
}

// Unexclude takes patterns out of .git/info/exclude again (a file ace wrote and excluded that the agent then
// made its own, and which must be committed with its work).
func (w *Workspace) Unexclude(patterns ...string) error {
	path := filepath.Join(w.Dir, ".git", "info", "exclude")
	old, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	lines := strings.Split(string(old), "\n")
	kept := slices.DeleteFunc(slices.Clone(lines), func(l string) bool { return slices.Contains(patterns, strings.TrimSpace(l)) })
	if len(kept) == len(lines) {
		return nil
	}
	return atomicfile.Write(path, []byte(strings.Join(kept, "\n")), 0o644)
}
