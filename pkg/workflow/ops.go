package workflow

import (
	"context"
	"errors"
	"fmt"

	"github.com/aceworks/ace/pkg/store"
)

// ErrNoSession is returned by operations that need the agent's live session when there is none.
var ErrNoSession = errors.New("the run has no live agent session")

// Stop cancels a run: its session (and every process it started) is killed, the run is marked cancelled and the
// issue says so. The working copy is kept. A visit of the run in progress (a long clone, say) is interrupted; the
// cancelled step then runs as the run's job, in whichever ace process works this host's queue.
func (e *Engine) Stop(ctx context.Context, r *store.Run, reason string) error {
	err := e.updateFresh(ctx, r, func(r *store.Run) (*store.Event, error) {
		if r.Status.Terminal() {
			return nil, errNoChange
		}
		r.Error = reason
		r.Step = string(StepCancelled)
		return &store.Event{Kind: "stop", Step: r.Step, Message: reason}, nil
	})
	if errors.Is(err, errNoChange) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("save run: %w", err)
	}
	e.signal()
	if e.queue == nil {
		return errors.New("workflow: no job queue")
	}
	if err := e.queue.interruptRun(ctx, r.Repo, r.Issue); err != nil {
		return err
	}
	return e.Follow(ctx, r, UntilSettled)
}

// Nudge types the nudge text into the agent's session now, whatever its idle time.
func (e *Engine) Nudge(ctx context.Context, r *store.Run) error {
	if err := e.requireSession(ctx, r); err != nil {
		return err
	}
	if isExec(r) {
		return e.nudgeExec(ctx, r)
	}
	if err := e.type_(ctx, r, e.nudgePrompt()); err != nil {
		return fmt.Errorf("nudge: %w", err)
	}
	e.event(ctx, r, "nudge", "nudged by hand (ace nudge)")
	return nil
}

// nudgeExec queues the nudge as the next turn of a headless run.
func (e *Engine) nudgeExec(ctx context.Context, r *store.Run) error {
	err := e.updateFresh(ctx, r, func(r *store.Run) (*store.Event, error) {
		queueExec(r, e.nudgePrompt())
		return &store.Event{Kind: "nudge", Step: r.Step,
			Message: "nudge queued by hand (ace nudge): the next turn of the conversation carries it"}, nil
	})
	if err != nil {
		return err
	}
	e.wake(ctx, r)
	return nil
}

// Send types text into the agent's session exactly as given (headless: queues it as the next turn). A run
// waiting for input resumes monitoring.
func (e *Engine) Send(ctx context.Context, r *store.Run, text string) error {
	if err := e.requireSession(ctx, r); err != nil {
		return err
	}
	if !isExec(r) {
		if err := e.typeAnswer(ctx, r, text); err != nil {
			return fmt.Errorf("type into %s: %w", r.Session, err)
		}
	}
	err := e.updateFresh(ctx, r, func(r *store.Run) (*store.Event, error) {
		before := r.Status
		if err := e.recordAnswer(ctx, r, text); err != nil {
			return nil, err
		}
		if before != r.Status {
			return &store.Event{Kind: "transition", Step: r.Step, Message: "waiting_input → monitor"}, nil
		}
		return nil, nil
	})
	if err != nil {
		return err
	}
	e.answerEvent(ctx, r, "")
	e.wake(ctx, r)
	return nil
}

// errNoChange tells updateFresh that the fresh run needs no change.
var errNoChange = errors.New("no change")

// updateFresh applies change to r and saves it. The run may be driven by another process at the same time (ace
// poll, while ace send, ace nudge or ace stop write it): a write that conflicts is redone on the fresh run.
func (e *Engine) updateFresh(ctx context.Context, r *store.Run, change func(*store.Run) (*store.Event, error)) error {
	for attempt := 0; ; attempt++ {
		ev, err := change(r)
		if err != nil {
			return err
		}
		err = e.o.Store.UpdateRun(ctx, r, ev)
		if !errors.Is(err, store.ErrConflict) || attempt == 5 {
			return err
		}
		fresh, gerr := e.o.Store.GetRun(ctx, r.ID)
		if gerr != nil {
			return fmt.Errorf("reload run %d: %w", r.ID, gerr)
		}
		*r = *fresh
	}
}

// wake makes the run's job look at the run now (it changed outside a visit: ace send, ace nudge).
func (e *Engine) wake(ctx context.Context, r *store.Run) {
	e.signal()
	if e.queue == nil {
		return
	}
	if err := e.queue.Enqueue(ctx, r); err != nil {
		e.log.WarnContext(ctx, "wake the run's job", "run", r.ID, "err", err)
	}
}

// Screen returns the agent's current screen (plus historyLines lines of scrollback).
func (e *Engine) Screen(ctx context.Context, r *store.Run, historyLines int) (string, error) {
	if isExec(r) {
		return "", fmt.Errorf("%s#%d: %w", r.Repo, r.Issue, ErrHeadless)
	}
	if err := e.requireSession(ctx, r); err != nil {
		return "", err
	}
	return e.o.Sessions.Capture(ctx, r.Session, historyLines)
}

func (e *Engine) requireSession(ctx context.Context, r *store.Run) error {
	if isExec(r) {
		// A headless run has no session to type into, only a conversation to continue with a new turn.
		if r.AgentSessionID == "" && !e.execAlive(ctx, r) {
			return fmt.Errorf("%s#%d (no headless conversation yet): %w", r.Repo, r.Issue, ErrNoSession)
		}
		return nil
	}
	if r.Session == "" {
		return fmt.Errorf("%s#%d: %w", r.Repo, r.Issue, ErrNoSession)
	}
	ok, err := e.o.Sessions.HasSession(ctx, r.Session)
	if err != nil {
		return fmt.Errorf("look for session %s: %w", r.Session, err)
	}
	if !ok {
		return fmt.Errorf("%s#%d (session %s is gone): %w", r.Repo, r.Issue, r.Session, ErrNoSession)
	}
	return nil
}
