package workflow

import (
	"context"

	"github.com/aceworks/ace/pkg/store"
)

// startSession opens the agent (its runner's Start), or re-attaches to the one a previous ace process left.
func (e *Engine) startSession(ctx context.Context, r *store.Run) (Result, error) {
	res, err := e.runner(r).Start(ctx, r)
	return e.reported(ctx, r, res, err)
}

// deliver gives the agent its task (its runner's Deliver). A released agent's first message (ResumeWith) is
// given once: an agent restarted later gets the resume prompt.
func (e *Engine) deliver(ctx context.Context, r *store.Run) (Result, error) {
	res, err := e.runner(r).Deliver(ctx, r)
	res, err = e.reported(ctx, r, res, err) // a human asked for, a limit the live agent's first turn met
	if r.State.PromptDelivered {
		r.State.ResumeWith = ""
	}
	return res, err
}
