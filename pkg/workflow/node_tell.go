package workflow

import (
	"context"

	"github.com/aceworks/ace/pkg/store"
)

// teller is a runner whose look decides to act on its agent (the tmux runner): tell acts on what.
type teller interface {
	tell(ctx context.Context, r *store.Run, what string) (Result, error)
}

// tell acts on the agent as the monitor decided — a menu's keys (a dialog, a permission with auto_approve, a
// limit's menu) sent on a screen read again that still shows it; its compaction command typed; a nudge, or a
// human asked at its budget or after max_nudges; for an agent gone, what it left finalized, or a restart, or the
// run failed — and goes back to the monitor (or on, for a gone agent). It is a step of its own, stored like the
// others: a visit of the monitor only looks and decides, and an act that failed is done again by the next visit
// here.
func (e *Engine) tell(ctx context.Context, r *store.Run) (Result, error) {
	t, ok := e.runner(r).(teller)
	if !ok || r.State.Tell == "" {
		return Goto(StepMonitor), nil // nothing to do: the agent is looked at again
	}
	res, err := t.tell(ctx, r, r.State.Tell)
	if err != nil {
		return Result{}, err
	}
	r.State.Tell = ""
	return e.reported(ctx, r, res, nil) // a human to be asked (the budget, the nudges spent)
}
