package workflow

import (
	"context"
	"errors"
	"fmt"

	"github.com/aceworks/ace/pkg/store"
)

// Stop cancels a run: its session (and every process it started) is killed, the run is marked cancelled and the
// issue says so. The working copy is kept. A visit of the run in progress (a long clone, say) is interrupted; the
// cancelled step then runs as the run's job, in whichever ace process works this host's queue.
func (e *Engine) Stop(ctx context.Context, r *store.Run, reason string) error {
	err := e.updateFresh(ctx, r, cancelMove(reason))
	if errors.Is(err, errNoChange) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("save run: %w", err)
	}
	e.signal()
	if e.jobs == nil {
		return errNoJobs
	}
	if err := e.jobs.Interrupt(ctx, r.Repo, r.Issue); err != nil {
		return err
	}
	return e.Follow(ctx, r, UntilSettled)
}

// cancelMove is the change that sends an unfinished run to its cancelled step for reason, for updateFresh (ace
// stop, a best-of parent stopping its attempts); errNoChange when the run has ended.
func cancelMove(reason string) func(*store.Run) (*store.Event, error) {
	return func(r *store.Run) (*store.Event, error) {
		if r.Status.Terminal() {
			return nil, errNoChange
		}
		r.Error = reason
		ev, err := transition(r, StepCancelled, store.StatusActive)
		if ev != nil {
			ev.Kind, ev.Message = "stop", reason
		}
		return ev, err
	}
}

// Nudge gives the agent the nudge text now, whatever its idle time (typed into its session, or the next turn of
// its conversation); a released agent is started again in its conversation with it (sent.go: Queued says so).
func (e *Engine) Nudge(ctx context.Context, r *store.Run) error {
	rn := e.runner(r)
	nudge := e.prompts.nudgePrompt()
	if err := rn.Live(ctx, r); err != nil {
		return e.releasedOr(ctx, r, err, nudge, "nudged by hand (ace nudge)")
	}
	if err := rn.Type(ctx, r, nudge); err != nil {
		return fmt.Errorf("nudge: %w", err)
	}
	err := e.updateFresh(ctx, r, func(r *store.Run) (*store.Event, error) {
		rn.Queue(r, nudge)
		return &store.Event{Kind: "nudge", Step: r.Step, Message: "nudged by hand (ace nudge): " + rn.Delivery()}, nil
	})
	if err != nil {
		return err
	}
	e.wake(ctx, r)
	return nil
}

// Send gives text to the agent exactly as given (typed into its session, or the next turn of its conversation);
// a released agent is started again in its conversation with it (sent.go: Queued says so). A run waiting for
// input resumes monitoring.
func (e *Engine) Send(ctx context.Context, r *store.Run, text string) error {
	rn := e.runner(r)
	if err := rn.Live(ctx, r); err != nil {
		return e.releasedOr(ctx, r, err, text, "sent with ace send")
	}
	if err := rn.Type(ctx, r, text); err != nil {
		return err
	}
	err := e.updateFresh(ctx, r, func(r *store.Run) (*store.Event, error) {
		next, err := e.humans.recordAnswer(ctx, r, text)
		if err != nil || next.Next == "" {
			return nil, err
		}
		return transition(r, next.Next, next.Status)
	})
	if err != nil {
		return err
	}
	e.humans.answerEvent(ctx, r, "")
	e.wake(ctx, r)
	return nil
}

// Screen returns the agent's current screen (plus historyLines lines of scrollback).
func (e *Engine) Screen(ctx context.Context, r *store.Run, historyLines int) (string, error) {
	return e.runner(r).Screen(ctx, r, historyLines)
}
