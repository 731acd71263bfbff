package workflow

import (
	"context"

	"github.com/aceworks/ace/pkg/store"
)

// What the monitor may decide to type into an idle agent (State.Tell), for the tell_agent step.
const (
	tellNudge   = "nudge"   // the nudge prompt: the agent sits at its prompt without having finished
	tellCompact = "compact" // its CLI's compaction command: its transcript grew past monitor.compact_threshold
)

// teller is a runner whose look decides to type into its idle agent (the tmux runner): tell types what.
type teller interface {
	tell(ctx context.Context, r *store.Run, what string) (Result, error)
}

// tellAgent is the monitor's decision to type what into the idle agent: the tell_agent step types it.
func tellAgent(r *store.Run, what string) Result {
	r.State.Tell = what
	return Goto(StepTell)
}

// tell types into the idle agent what the monitor decided (a nudge, its compaction command) and goes back to the
// monitor. It is a step of its own, stored like the others: a visit of the monitor only looks and decides, and a
// nudge that failed to go in is typed again by the next visit here.
func (e *Engine) tell(ctx context.Context, r *store.Run) (Result, error) {
	t, ok := e.runner(r).(teller)
	if !ok || r.State.Tell == "" {
		return Goto(StepMonitor), nil // nothing to type: the agent is looked at again
	}
	res, err := t.tell(ctx, r, r.State.Tell)
	if err != nil {
		return Result{}, err
	}
	r.State.Tell = ""
	return res, nil
}
