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
	if sent := sentWaiting(r); sent != "" {
		answer = joinMessages(sent, answer) // sent.go: ace send to its released agent
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
	if waits(r) {
		// The agent works again: it takes its slot back first — its idle one, or, when it was released meanwhile,
		// one free or given up by an idle agent; the answer waits on the issue until then.
		ok, err := e.slots.acquire(ctx, r)
		if err != nil {
			return Result{}, err
		}
		if !ok {
			return Stay(e.slots.slotWait()), nil
		}
	}
	var restart Result
	if r.State.Released {
		// Its agent was stopped for its slot: it starts again in its conversation, the answer its first message.
		r.State.ResumeWith = answer
		if restart, err = e.runner(r).FollowUp(ctx, r, answer, "answer delivered"); err != nil {
			return Result{}, fmt.Errorf("the answer: %w", err)
		}
	} else if err := e.runner(r).Type(ctx, r, answer); err != nil {
		// The answer goes in exactly as the human wrote it: no prefix, no rewording.
		return Result{}, fmt.Errorf("the answer: %w", err)
	}
	next, err := e.humans.recordAnswer(ctx, r, answer)
	if err != nil {
		return Result{}, err
	}
	if restart.Next != "" {
		next.Next = restart.Next
	}
	e.humans.answerEvent(ctx, r, who)
	return next, nil
}
