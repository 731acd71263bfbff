package workflow

import (
	"context"

	"github.com/aceworks/ace/pkg/store"
)

// endSession ends the agent and everything it started, if it is still there.
func (e *Engine) endSession(ctx context.Context, r *store.Run) error {
	return e.runner(r).Stop(ctx, r)
}

func (e *Engine) finish(r *store.Run) {
	now := e.o.Now()
	r.FinishedAt = &now
}
