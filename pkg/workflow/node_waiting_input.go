package workflow

import (
	"context"
	"fmt"

	"github.com/aceworks/ace/pkg/store"
)

// waitingInput relays a trusted human's answer from the issue into the session and resumes monitoring.
func (e *Engine) waitingInput(ctx context.Context, r *store.Run) (Result, error) {
	if next, ok := e.checkIssue(ctx, r); ok {
		return next, nil
	}
	if summary, ok := readProtocolFile(r.Workdir, doneFile); ok {
		// Someone helped the agent directly (ace attach) and it finished.
		r.State.Summary = summary
		return Goto(StepFinalize).With(store.StatusActive), nil
	}
	asked := r.State.QuestionAt
	if asked.IsZero() {
		asked = r.UpdatedAt
	}
	who, answer, err := e.humans.findAnswer(ctx, r, asked)
	if err != nil {
		return Result{}, err
	}
	if answer == "" {
		return Stay(e.cfg.Poll.Interval.Duration), nil
	}
	// The answer goes in exactly as the human wrote it: no prefix, no rewording.
	if err := e.runner(r).Type(ctx, r, answer); err != nil {
		return Result{}, fmt.Errorf("the answer: %w", err)
	}
	next, err := e.humans.recordAnswer(ctx, r, answer)
	if err != nil {
		return Result{}, err
	}
	e.humans.answerEvent(ctx, r, who)
	return next, nil
}
