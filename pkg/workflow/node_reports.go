package workflow

import (
	"context"

	"github.com/aceworks/ace/pkg/store"
)

// Runners report, nodes decide: a runner's look returns what it saw that is not its own business — a usage limit
// (Result.limit), an agent waiting for a human (Result.ask) — and the node that called it decides on it here,
// after every call of a runner that returns a Result. A runner never posts on the issue nor pauses a run itself,
// and the node does not post either: the question goes to the ask_human step (node_ask.go).

// reported decides on what a runner returned: a usage limit it saw is decided on (usageLimits.reported); a human
// it asks for is kept in the run for the ask_human step, which posts the question, and what the runner changes
// once it asked (humanAsk.asked) is done with the move, saved in the same write; anything else passes through.
func (e *Engine) reported(ctx context.Context, r *store.Run, res Result, err error) (Result, error) {
	if err != nil {
		return res, err
	}
	if a := res.ask; a != nil {
		if a.asked != nil {
			a.asked()
		}
		r.State.Ask = &store.Ask{Message: a.msg, Screen: a.screen, InWords: a.inWords}
		return Goto(StepAsk).With(store.StatusActive), nil
	}
	return e.limits.reported(ctx, r, res, nil)
}
