package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// SyncMirror creates or fetches the mirror of spec's repository (what Prepare does first) and returns its path.
// Only Repo and RemoteURL of spec are read.
func (m *Manager) SyncMirror(ctx context.Context, spec Spec) (string, error) {
	return m.syncMirror(ctx, spec)
}

// Detached makes dir, which must not exist, a throwaway working copy of repo's mirror at commit (a full
// hexadecimal commit id), its HEAD detached there: ace eval checks tasks in such copies, never in a run's. Like a
// run's copy it borrows the mirror's objects and knows its branches, so it is no copy to show an agent that must
// not see what came after commit.
func (m *Manager) Detached(ctx context.Context, repo, commit, dir string) error {
	if !IsCommitID(commit) {
		return fmt.Errorf("detached working copy: %q is not a commit id", commit)
	}
	mirror, err := m.mirrorPath(repo)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	if _, err := m.git(ctx, filepath.Dir(dir), "clone", "-q", "--shared", "--no-checkout", "--", mirror, dir); err != nil {
		return fmt.Errorf("clone %s from its mirror: %w", repo, err)
	}
	if _, err := m.git(ctx, dir, "checkout", "-q", "--detach", commit); err != nil {
		return fmt.Errorf("check out %s: %w", commit, err)
	}
	return nil
}

// IsCommitID reports whether s is a full SHA-1 or SHA-256 commit id in lower-case hexadecimal.
func IsCommitID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
