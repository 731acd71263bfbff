package workflow

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aceworks/ace/pkg/store"
)

// Text sent to a run whose agent was released (stopped to free its slot, its conversation kept) — ace send, ace
// nudge, the dashboard — has no process to go to. It is queued as the first message of the agent's next start
// (AgentState.ResumeWith, joined to any queued before it) and the run is woken: it takes a slot as any run going
// back to work does, and its agent starts again in its conversation with the text. A run waiting for a human takes
// it as the answer (waitingInput); one following its pull request as a round of its own (sentRound); one paused
// for a usage limit gives it with the continue, once the limit has reset (resumeFromLimit).

// queueForReleased queues text for run r's released agent, for what (an event's words: "sent with ace send"). It
// reports ErrNoSession when the run's agent was not released (it is running, or gone for another reason).
func (e *Engine) queueForReleased(ctx context.Context, r *store.Run, text, what string) error {
	err := e.updateFresh(ctx, r, func(r *store.Run) (*store.Event, error) {
		if !AgentReleased(r) {
			return nil, fmt.Errorf("%s#%d: %w", r.Repo, r.Issue, ErrNoSession)
		}
		r.State.ResumeWith = joinMessages(r.State.ResumeWith, text)
		return &store.Event{Kind: string(EventQueued), Step: r.Step, Message: fmt.Sprintf("%s, queued for the released "+
			"agent: %s", what, Queued(r))}, nil
	})
	if err != nil {
		return err
	}
	e.wake(ctx, r)
	return nil
}

// Queued says how text queued for run r's released agent (ace send, ace nudge) reaches it; "" when none waits.
func Queued(r *store.Run) string {
	if r.State.ResumeWith == "" || !AgentReleased(r) {
		return ""
	}
	if r.Status == store.StatusPausedLimit {
		when := "once its usage limit resets"
		if !r.State.ResumeAt.IsZero() {
			when = "once its usage limit resets (" + r.State.ResumeAt.UTC().Format(time.RFC3339) + ")"
		}
		return "it starts again in its conversation with the text " + when
	}
	return "it starts again in its conversation with the text as soon as the run has a slot"
}

// sentWaiting returns the text queued for run r's released agent, "" when none waits.
func sentWaiting(r *store.Run) string {
	if !AgentReleased(r) {
		return ""
	}
	return r.State.ResumeWith
}

// sentRound starts, for a run following its pull request whose released agent was sent text, a round whose
// prompt is the text: the agent works on it with a slot of its own, and what it commits is pushed as a round's.
// It counts as a round, as an /ace comment does, though pr.max_rounds does not hold back what a human asked for.
func (ft *followThrough) sentRound(ctx context.Context, r *store.Run, f *store.FollowState, text string) (Result, error) {
	ok, err := ft.slots.acquire(ctx, r)
	if err != nil {
		return Result{}, err
	}
	if !ok {
		return Stay(ft.slots.slotWait()), nil
	}
	if err := removeProtocolFile(r, doneFile); err != nil {
		return Result{}, ft.core.needFile(ctx, r, "start the round", err)
	}
	// The round's file says what it is about, as every round's does: an earlier round's must not be read as this one's.
	if err := ft.writeFollowFile(r, "## A message sent to the agent\n\n"+quote(text)+"\n"); err != nil {
		return Result{}, ft.core.needFile(ctx, r, "write "+followFile, err)
	}
	f.Rounds++
	f.InRound = true
	f.Topic = "a message sent to the agent"
	f.Tried = append(f.Tried, fmt.Sprintf("round %d: %s", f.Rounds, f.Topic))
	f.Prompt = text
	r.State.Follow = f
	r.State.Summary = ""
	r.Nudges, r.State.NudgedAt = 0, time.Time{}
	headline := fmt.Sprintf("round %d on %s: %s", f.Rounds, r.PRURL, f.Topic)
	ft.core.event(ctx, r, EventRound, headline)
	if err := ft.status.postStatus(ctx, r, statusView{Headline: headline}); err != nil {
		ft.log.WarnContext(ctx, "status comment", "run", r.ID, "err", err) // the round matters more than its report
	}
	return ft.deliverRound(ctx, r)
}

// releasedOr is err, the error of an operation that needs the agent's session, unless run r's agent was
// released: text is then queued for its next start (queueForReleased).
func (e *Engine) releasedOr(ctx context.Context, r *store.Run, err error, text, what string) error {
	if !errors.Is(err, ErrNoSession) || !AgentReleased(r) {
		return err
	}
	return e.queueForReleased(ctx, r, text, what)
}
