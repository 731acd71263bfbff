package workflow

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"time"

	"github.com/aceworks/ace/pkg/store"
)

// Stepping a run: the engine runs the run's current node once, persists what changed and tells the run's
// watchers. It sits above the graph's nodes it calls and the parts they use; engine.go builds the engine.

// Step runs the run's current node once and persists what changed. The returned error is only for failures of
// the engine itself (store unavailable, ctx cancelled); a node's own errors are handled by retry or failure.
func (e *Engine) Step(ctx context.Context, r *store.Run) (Result, error) {
	resumeWaiting(r)
	step := Step(r.Step)
	node, ok := e.nodes[step]
	if !ok {
		return Result{}, fmt.Errorf("run %d: unknown step %q (written by a newer ace?)", r.ID, step)
	}
	if res, wait, err := e.slots.gate(ctx, r); wait || err != nil { // a working run holds a slot first (slots.go)
		return res, err
	}
	before, reached := snapshot(r), r.State.Reach
	nctx, cancel := context.WithTimeout(ctx, stepTimeout(step))
	res, err := e.call(nctx, node, r)
	timedOut := nctx.Err() != nil
	cancel()
	if err != nil && ctx.Err() != nil {
		return Result{}, ctx.Err()
	}
	if err != nil && timedOut {
		err = fmt.Errorf("step %s did not finish within %s: %w", step, stepTimeout(step), err)
	}
	var ev *store.Event
	if err != nil {
		res, ev = e.onError(r, step, err)
	} else if res.Next != "" {
		r.State.Retries = 0
	}
	to := Step(r.Step)
	if res.Next != "" {
		to = res.Next
	}
	tev, err := transition(r, to, res.Status)
	if err != nil {
		// A node asked for a move the graph does not have: a bug, reported, never saved.
		return Result{}, fmt.Errorf("step %s: %w", step, err)
	}
	if ev == nil {
		ev = tev
	}
	if to != step {
		e.notify(Progress{Run: r, Kind: EventStep, Step: to})
	}
	// The run's proxy served while it is boxed, and what it saw counted; what it saw of the model goes to the reach.
	if seen, boxed := e.box.Keep(ctx, r); boxed && !r.Status.Terminal() {
		e.reach.fromBox(ctx, r, seen)
	}
	e.reach.settle(ctx, r, reached) // what the visit saw of the model: its destination, hint, a new state said
	if ev != nil || !reflect.DeepEqual(before, snapshot(r)) {
		if err := e.o.Store.UpdateRun(ctx, r, ev); err != nil {
			if errors.Is(err, store.ErrConflict) {
				// Another process moved the run on; continue from what it wrote.
				fresh, gerr := e.o.Store.GetRun(ctx, r.ID)
				if gerr != nil {
					return Result{}, fmt.Errorf("reload run %d after conflict: %w", r.ID, gerr)
				}
				e.runner(r).Abandon(r, fresh)
				*r = *fresh
				return Stay(time.Second), nil
			}
			return Result{}, fmt.Errorf("save run %d: %w", r.ID, err)
		}
		e.signal()
		if r.Status.Terminal() {
			e.attemptEnded(ctx, r) // bestof_attempt.go: its best-of parent looks at once
		}
	}
	if left := e.slots.settle(ctx, r); left > 0 && res.Wait > left {
		res.Wait = left // an idle agent is kept pr.release_after at most
	}
	return res, nil
}

// call runs a node with panic recovery: a bug in one node fails that run, never the process.
func (e *Engine) call(ctx context.Context, node Node, r *store.Run) (res Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			e.log.ErrorContext(ctx, "node panicked", "run", r.ID, "step", r.Step, "panic", p, "stack", string(debug.Stack()))
			err = Terminalf("internal error in step %s: %v", r.Step, p)
		}
	}()
	return node(ctx, r)
}

// onError turns a node's error into the run's next move: a bounded number of retries with backoff for errors that
// may pass, the failed step for the rest. Failing to report a failure is retried the same way and then given up.
func (e *Engine) onError(r *store.Run, step Step, err error) (Result, *store.Event) {
	n := r.State.Retries
	e.log.Warn("step failed", "run", r.ID, "repo", r.Repo, "issue", r.Issue, "step", step, "attempt", n+1, "err", err)
	if !IsTerminal(err) && n < e.o.MaxRetries {
		r.State.Retries = n + 1
		wait := backoff(n)
		e.notify(Progress{Run: r, Kind: EventRetry, Step: step, Message: err.Error()})
		return Stay(wait), &store.Event{Kind: "retry", Step: string(step),
			Message: fmt.Sprintf("%v (retry %d/%d in %s)", err, n+1, e.o.MaxRetries, wait)}
	}
	r.State.Retries = 0
	if step == StepFailed || step == StepCancelled {
		// Reporting the end failed for good: end the run anyway, the reason stays in the store.
		now := e.o.Now()
		r.FinishedAt = &now
		return Result{Status: endStatus(step)}, &store.Event{Kind: "error", Step: string(step), Message: "could not report: " + err.Error()}
	}
	r.Error = err.Error()
	return Goto(StepFailed), &store.Event{Kind: "error", Step: string(step), Message: err.Error()}
}

func endStatus(s Step) store.Status {
	if s == StepCancelled {
		return store.StatusCancelled
	}
	return store.StatusFailed
}

// backoff is 2s, 4s, 8s … capped at one minute.
func backoff(n int) time.Duration {
	d := 2 * time.Second << n
	if d > time.Minute || d <= 0 {
		d = time.Minute
	}
	return d
}

// snapshot copies the fields of a run that matter for "did anything change".
func snapshot(r *store.Run) store.Run {
	c := *r
	c.UpdatedAt = time.Time{}
	c.Version = 0
	c.Slot, c.SlotAt = "", time.Time{} // the store's slots are written apart from the run (slots.go)
	return c
}
