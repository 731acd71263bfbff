package eval

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/aceworks/ace/pkg/workspace"
)

// RunWorkspaces are the working copies of ace eval run's engine (it is the engine's Workspaces). Item n's copy is
// made from a repository of its own that holds the task's past and nothing else — its cut base (CutBase), the
// run's remote, where its push goes — through a workspace manager of its own whose copies hold their objects
// (workspace.Options.OwnObjects): no alternates, no mirror that any box shows, no other item's work. ace's
// mirror of the repository is never shown to an agent; an item's workflow file is read on the host from its cut
// base (IssueMirrorPath), as the repository had it at the task's base commit.
type RunWorkspaces struct {
	dir    string // <eval dir>/items
	mirror string
	branch string
	task   func(n int) (Item, *Task, error)
	opts   workspace.Options
	caches *workspace.Manager

	mu       sync.Mutex
	managers map[int]*workspace.Manager
}

// NewRunWorkspaces makes the eval's working copies under dir/items, from the repository's mirror (ace's), whose
// default branch is branch; task gives item n and its task. opts are every item manager's options but their
// root. The dependency caches are the eval's own (dir/cache), shared by its runs, never production's.
func NewRunWorkspaces(dir, mirror, branch string, task func(n int) (Item, *Task, error), opts workspace.Options) (*RunWorkspaces, error) {
	copts := opts
	copts.Root = dir
	caches, err := workspace.New(copts)
	if err != nil {
		return nil, err
	}
	opts.OwnObjects = true
	return &RunWorkspaces{dir: filepath.Join(dir, "items"), mirror: mirror, branch: branch, task: task, opts: opts,
		caches: caches, managers: map[int]*workspace.Manager{}}, nil
}

// ItemDir is where item n's cut base, mirror and working copy live.
func (w *RunWorkspaces) ItemDir(n int) string { return filepath.Join(w.dir, strconv.Itoa(n)) }

// Remote is item n's cut base: its run's remote, where its branch is pushed.
func (w *RunWorkspaces) Remote(n int) string { return filepath.Join(w.ItemDir(n), "base.git") }

func (w *RunWorkspaces) manager(n int) (*workspace.Manager, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if m := w.managers[n]; m != nil {
		return m, nil
	}
	o := w.opts
	o.Root = filepath.Join(w.ItemDir(n), "ace")
	m, err := workspace.New(o)
	if err != nil {
		return nil, err
	}
	w.managers[n] = m
	return m, nil
}

// Prepare makes (or reopens) item spec.Issue's working copy: its cut base first, then the copy from it, on the
// run's branch off the default branch, which the cut base has at the task's base commit.
func (w *RunWorkspaces) Prepare(ctx context.Context, spec workspace.Spec) (*workspace.Workspace, error) {
	_, t, err := w.task(spec.Issue)
	if err != nil {
		return nil, err
	}
	remote := w.Remote(spec.Issue)
	if _, err := os.Stat(remote); os.IsNotExist(err) {
		if err := CutBase(ctx, w.mirror, t.BaseCommit, w.branch, remote); err != nil {
			return nil, fmt.Errorf("item %d: %w", spec.Issue, err)
		}
	}
	m, err := w.manager(spec.Issue)
	if err != nil {
		return nil, err
	}
	spec.RemoteURL, spec.BaseBranch = remote, w.branch
	return m.Prepare(ctx, spec)
}

// Open reopens item n's working copy.
func (w *RunWorkspaces) Open(ctx context.Context, repo string, n int) (*workspace.Workspace, error) {
	m, err := w.manager(n)
	if err != nil {
		return nil, err
	}
	return m.Open(ctx, repo, n)
}

// MirrorPath is ace's mirror of the repository: never shown to an agent, since these working copies borrow
// nothing from it. The engine reads an item's workflow file from IssueMirrorPath instead.
func (w *RunWorkspaces) MirrorPath(string) (string, error) { return w.mirror, nil }

// IssueMirrorPath is item n's cut base, made by Prepare, whose default branch is the task's base commit: the
// engine reads the item's workflow file (its setup and verify commands, its template) there, on the host, as the
// repository had it at the base — never the mirror's, from after the task.
func (w *RunWorkspaces) IssueMirrorPath(_ string, n int) (string, error) {
	remote := w.Remote(n)
	if _, err := os.Stat(remote); err != nil {
		return "", fmt.Errorf("item %d's cut base: %w", n, err)
	}
	return remote, nil
}

// DepCacheEnv points package managers at the eval's own dependency caches.
func (w *RunWorkspaces) DepCacheEnv(repo string) ([]string, error) { return w.caches.DepCacheEnv(repo) }
