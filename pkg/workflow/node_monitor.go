package workflow

import (
	"context"

	"github.com/aceworks/ace/pkg/store"
)

// monitor is one level-based look at the run: it decides from what is true now, never from remembered events.
func (e *Engine) monitor(ctx context.Context, r *store.Run) (Result, error) {
	if next, ok := e.checkIssue(ctx, r); ok {
		return next, nil
	}
	if res, ok, err := e.limits.gate(ctx, r); ok || err != nil { // usage limits: limits.go
		return res, err
	}
	if res, ok, err := e.reach.gate(ctx, r); ok || err != nil { // the model unreachable too long: reach.go
		return e.reported(ctx, r, res, err)
	}
	rn := e.runner(r)
	if res, busy, err := rn.Busy(ctx, r); busy || err != nil {
		return e.reported(ctx, r, res, err) // what the runner saw: node_reports.go decides
	}
	if summary, ok := e.readProtocolFile(ctx, r, doneFile); ok {
		r.State.Summary = summary
		e.event(ctx, r, "done", "the agent wrote .ace/DONE")
		return Goto(StepFinalize), nil
	}
	if q, ok := e.readProtocolFile(ctx, r, questionFile); ok && q != "" {
		return e.reported(ctx, r, askInWords(q, ""), nil)
	}
	res, err := rn.Observe(ctx, r)
	return e.reported(ctx, r, res, err)
}
