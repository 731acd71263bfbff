package workspace

import (
	"context"
	"strconv"
)

// Workspace is one issue's working copy. Its fields are ace's record of it (record.go), never what the copy's
// own configuration or HEAD say.
type Workspace struct {
	Dir        string
	Repo       string
	Issue      int
	Branch     string // the run's branch: the one ace commits on and pushes
	BaseBranch string
	BaseCommit string
	RemoteURL  string // where the branch is pushed

	m *Manager
}

// Exclude adds patterns to ace's exclude file (never .gitignore, which is tracked; see exclude.go).
func (w *Workspace) Exclude(ctx context.Context, patterns ...string) error {
	return w.writeExcludes(ctx, patterns)
}

// HasChanges reports uncommitted changes (untracked files included, excluded files not; what changed inside a
// submodule's own working tree is the submodule's, not a change here).
func (w *Workspace) HasChanges(ctx context.Context) (bool, error) {
	out, err := w.git(ctx, nil, "status", "--porcelain", "--untracked-files=all", "--ignore-submodules=dirty")
	return out != "", err
}

// CommitAll commits every change with msg as ace, on the run's branch; committed is false when there was nothing
// to commit. A working copy left on another branch (or none) is refused: ace commits and pushes only its own.
func (w *Workspace) CommitAll(ctx context.Context, msg string) (hash string, committed bool, err error) {
	changed, err := w.HasChanges(ctx)
	if err != nil || !changed {
		return "", false, err
	}
	if err := w.onBranch(ctx); err != nil {
		return "", false, err
	}
	if _, err := w.git(ctx, nil, "add", "-A"); err != nil {
		return "", false, err
	}
	if _, err := w.git(ctx, nil, "commit", "-q", "--no-verify", "-m", msg); err != nil {
		return "", false, err
	}
	hash, err = w.Head(ctx)
	return hash, true, err
}

// onBranch refuses a working copy whose HEAD is not the run's branch.
func (w *Workspace) onBranch(ctx context.Context) error {
	head, err := w.git(ctx, nil, "symbolic-ref", "-q", "HEAD")
	if err != nil || head == "" {
		head = "a detached HEAD"
	}
	if head != "refs/heads/"+w.Branch {
		return refusedf("the working copy is on %s, not on the run's branch %s: ace commits and pushes only %s",
			head, w.Branch, w.Branch)
	}
	return nil
}

// Head is the commit the run's branch is at in the working copy: what a push sends.
func (w *Workspace) Head(ctx context.Context) (string, error) {
	out, err := w.git(ctx, nil, "rev-parse", "--verify", "-q", "refs/heads/"+w.Branch+"^{commit}")
	if err != nil {
		return "", err
	}
	if !isHash(out) {
		return "", refusedf("the run's branch %s resolves to %q, not a commit", w.Branch, out)
	}
	return out, nil
}

// CommitsAhead counts the commits on the run's branch that its base did not have.
func (w *Workspace) CommitsAhead(ctx context.Context) (int, error) {
	out, err := w.git(ctx, nil, "rev-list", "--count", "refs/heads/"+w.Branch, "^"+w.BaseCommit, "--")
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(out)
}
