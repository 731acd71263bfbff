package workflow

import (
	"context"
	"fmt"

	"github.com/aceworks/ace/pkg/store"
)

// questionWatcher is a runner whose agent asks its questions over a protocol (the live runner): it sees when
// the question the run waits on no longer waits for an answer, and why.
type questionWatcher interface {
	QuestionGone(ctx context.Context, r *store.Run) (why string, gone bool, err error)
}

// waitingInput relays a trusted human's answer from the issue into the session and resumes monitoring.
func (e *Engine) waitingInput(ctx context.Context, r *store.Run) (Result, error) {
	if next, ok := e.checkIssue(ctx, r); ok {
		return next, nil
	}
	if summary, ok := e.readProtocolFile(ctx, r, doneFile); ok {
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
		// A question of the agent's own that it took back (its turn interrupted, say) waits for nobody.
		if q, ok := e.runner(r).(questionWatcher); ok {
			why, gone, err := q.QuestionGone(ctx, r)
			if err != nil {
				return Result{}, err
			}
			if gone {
				return e.humans.questionGone(ctx, r, why)
			}
		}
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
