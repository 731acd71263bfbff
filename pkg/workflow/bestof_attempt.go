package workflow

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workspace"
)

// A best-of attempt's side of the graph (bestof.go): its own working copy and session, a push and no pull
// request, its end waking its parent.

// attemptCopy is the run's working copy number (workspace.Spec.Copy): k for best-of attempt k, else 0.
func attemptCopy(r *store.Run) int {
	if a := r.State.AttemptOf; a != nil {
		return a.K
	}
	return 0
}

// attemptSuffix tells an attempt's session and logs from its parent's and its siblings': "-<k>", or "".
func attemptSuffix(r *store.Run) string {
	if k := attemptCopy(r); k > 0 {
		return "-" + strconv.Itoa(k)
	}
	return ""
}

// copyOf is the numbered working copy run r works in, 0 for the issue's own: an attempt's (<issue>-<k>), and a
// best-of parent's once it has chosen — the winner's, whose branch its pull request is and where the winner's
// agent kept its conversation, so that a round of the pull request reaches that agent in its copy.
func copyOf(r *store.Run) int {
	if k := attemptCopy(r); k > 0 {
		return k
	}
	if bo := r.State.BestOf; bo != nil {
		return bo.Winner
	}
	return 0
}

// copyOpener is the Workspaces that hold numbered copies of an issue beside its own (workspace.Manager).
type copyOpener interface {
	OpenCopy(ctx context.Context, repo string, issue, k int) (*workspace.Workspace, error)
}

// copyRemover is the Workspaces that can delete a numbered copy (workspace.Manager).
type copyRemover interface {
	RemoveCopy(ctx context.Context, repo string, issue, k int) error
}

// removeWork deletes the run's working copy (copyOf's); removed is false when these Workspaces delete none.
func (e *Engine) removeWork(ctx context.Context, r *store.Run) (removed bool, err error) {
	if k := copyOf(r); k > 0 {
		if rm, ok := e.o.Workspaces.(copyRemover); ok {
			return true, rm.RemoveCopy(ctx, r.Repo, r.Issue, k)
		}
		return false, nil
	}
	if rm, ok := e.o.Workspaces.(workspaceRemover); ok {
		return true, rm.Remove(ctx, r.Repo, r.Issue)
	}
	return false, nil
}

// openWork opens the run's working copy: the issue's own, or copyOf's.
func (e *Engine) openWork(ctx context.Context, r *store.Run) (*workspace.Workspace, error) {
	k := copyOf(r)
	if k == 0 {
		return e.o.Workspaces.Open(ctx, r.Repo, r.Issue)
	}
	co, ok := e.o.Workspaces.(copyOpener)
	if !ok {
		return nil, Terminalf("best-of attempt %d: these working copies hold one per issue", k)
	}
	return co.OpenCopy(ctx, r.Repo, r.Issue, k)
}

// attemptPushed ends an attempt's finalize: its change is measured for the judging, and it ends without a pull
// request.
func (e *Engine) attemptPushed(ctx context.Context, r *store.Run, ws *workspace.Workspace) (Result, error) {
	d, err := ws.DiffSize(ctx)
	if err != nil {
		return Result{}, err
	}
	a := *r.State.AttemptOf
	a.Pushed, a.Files, a.Lines = true, d.Files, d.Lines
	r.State.AttemptOf = &a
	line, _ := verifyReport(r)
	e.event(ctx, r, EventBestOf, fmt.Sprintf("attempt %d pushed %s: %d file(s), %d line(s) changed. %s", a.K, r.Branch, d.Files, d.Lines, line))
	return Goto(StepReport), nil
}

// attemptDone ends an attempt that pushed its branch: its agent goes, the issue is its parent's to report on.
func (e *Engine) attemptDone(ctx context.Context, r *store.Run) (Result, error) {
	if err := e.endSession(ctx, r); err != nil {
		return Result{}, err
	}
	e.memory.remember(ctx, r, fmt.Sprintf("best-of attempt %d: pushed %s", r.State.AttemptOf.K, r.Branch))
	e.finish(r)
	return Goto(StepDone).With(store.StatusDone), nil
}

// attemptEnded wakes the parent of an attempt that just ended (its end is saved): it judges once all have.
func (e *Engine) attemptEnded(ctx context.Context, r *store.Run) {
	a := r.State.AttemptOf
	if a == nil {
		return
	}
	p, err := e.o.Store.GetRun(ctx, a.Parent)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			e.log.WarnContext(ctx, "wake a best-of parent", "run", r.ID, "parent", a.Parent, "err", err)
		}
		return
	}
	e.event(ctx, p, EventBestOf, fmt.Sprintf("attempt %d (run %d, %s) ended %s", a.K, r.ID, r.Agent, r.Status))
	e.wake(ctx, p)
}
