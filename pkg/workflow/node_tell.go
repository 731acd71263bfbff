package workflow

import (
	"context"

	"github.com/aceworks/ace/pkg/store"
)

// teller is a runner whose look decides to act on its idle agent (the tmux runner): tell acts on what.
type teller interface {
	tell(ctx context.Context, r *store.Run, what string) (Result, error)
}

// tell acts on the idle agent as the monitor decided — its compaction command typed; a nudge, or a human asked
// at its budget or after max_nudges — and goes back to the monitor. It is a step of its own, stored like the
// others: a visit of the monitor only looks and decides, and a nudge that failed to go in is typed again by the
// next visit here.
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
