package workspace

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
)

// Workspace is one issue's working copy.
type Workspace struct {
	Dir        string
	Repo       string
	Issue      int
	Branch     string
	BaseBranch string
	BaseCommit string
	RemoteURL  string

	m    *Manager
	repo *git.Repository
}

// Exclude adds patterns to ace's exclude file (never .gitignore, which is tracked; see exclude.go).
func (w *Workspace) Exclude(ctx context.Context, patterns ...string) error {
	return w.m.writeExcludes(ctx, w.Dir, patterns)
}

// HasChanges reports uncommitted changes (untracked files included, excluded files not).
func (w *Workspace) HasChanges(ctx context.Context) (bool, error) {
	out, err := w.m.git(ctx, w.Dir, "status", "--porcelain", "--untracked-files=all")
	return out != "", err
}

// CommitAll commits every change with msg as ace; committed is false when there was nothing to commit.
func (w *Workspace) CommitAll(ctx context.Context, msg string) (hash string, committed bool, err error) {
	changed, err := w.HasChanges(ctx)
	if err != nil || !changed {
		return "", false, err
	}
	if _, err := w.m.git(ctx, w.Dir, "add", "-A"); err != nil {
		return "", false, err
	}
	if _, err := w.m.git(ctx, w.Dir, "commit", "-q", "--no-verify", "-m", msg); err != nil {
		return "", false, err
	}
	hash, err = w.Head(ctx)
	return hash, true, err
}

// Head is the commit the working copy is at.
func (w *Workspace) Head(ctx context.Context) (string, error) {
	return w.m.git(ctx, w.Dir, "rev-parse", "HEAD")
}

// CommitsAhead counts the commits on the branch that its base did not have.
func (w *Workspace) CommitsAhead(ctx context.Context) (int, error) {
	out, err := w.m.git(ctx, w.Dir, "rev-list", "--count", w.BaseCommit+"..HEAD")
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(out)
}

// Push sends the branch to origin, authenticating with token in memory. It never forces: a branch that moved
// on the remote is an error, not something to overwrite.
func (w *Workspace) Push(ctx context.Context, token string) error {
	ref := gitconfig.RefSpec("refs/heads/" + w.Branch + ":refs/heads/" + w.Branch)
	err := w.repo.PushContext(ctx, &git.PushOptions{RemoteName: "origin", RefSpecs: []gitconfig.RefSpec{ref},
		Auth: auth(w.RemoteURL, token)})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return fmt.Errorf("push %s to %s: %w", w.Branch, redactURL(w.RemoteURL), err)
	}
	return nil
}
