package workflow

import (
	"context"

	"github.com/aceworks/ace/pkg/store"
)

// ask posts the question a node decided on (reported keeps it in the run as State.Ask) on the issue and parks the
// run in waiting_input. It is a step of its own, stored like the others: the node that saw the question only
// decides, and a question that could not be posted (a tracker error) is posted again by the next visit here,
// after a restart of ace too, never looked for again on a screen that may have moved on.
func (e *Engine) ask(ctx context.Context, r *store.Run) (Result, error) {
	a := r.State.Ask
	if a == nil {
		// Nothing left to ask (the question was posted and the visit's save lost): the agent is looked at again.
		if !r.State.PromptDelivered {
			return Goto(StepDeliver), nil
		}
		return Goto(StepMonitor), nil
	}
	if err := e.humans.askHuman(ctx, r, a.Message, a.Screen); err != nil {
		return Result{}, err
	}
	r.State.Ask = nil
	if a.InWords {
		return toHumanInWords(r), nil
	}
	return toHuman(), nil
}
