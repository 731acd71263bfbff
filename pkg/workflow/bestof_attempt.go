package workflow

import (
	"context"
	"errors"
	"fmt"

	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workspace"
)

// A best-of attempt's side of the graph (bestof.go): its own working copy and session, a push and no pull
// request, its end waking its parent.

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
