package workflow

import (
	"context"
	"errors"

	"github.com/aceworks/ace/pkg/store"
)

// Jobs is the job queue the runs advance on, as the graph sees it (pkg/queue, on River): the graph asks for a
// run's job to be due, or interrupted, and whether this host is fenced off; it knows nothing else of it.
type Jobs interface {
	// Enqueue makes sure the run's job exists and is due now.
	Enqueue(ctx context.Context, r *store.Run) error
	// Interrupt cancels the issue's run job while it works (ace stop interrupts a long step).
	Interrupt(ctx context.Context, repo string, issue int) error
	// Fenced reports whether this host is cut off from the store for long enough that another may take its runs.
	Fenced() bool
	// Dispatch makes a dispatch pass due now: a slot was freed for work (slots.go).
	Dispatch(ctx context.Context) error
}

// UseJobs makes the runs of e advance as jobs of j.
func (e *Engine) UseJobs(j Jobs) { e.jobs = j }

var errNoJobs = errors.New("workflow: no job queue")

// enqueue makes the run's job due now.
func (e *Engine) enqueue(ctx context.Context, r *store.Run) error {
	if e.jobs == nil {
		return errNoJobs
	}
	return e.jobs.Enqueue(ctx, r)
}

// dispatch makes a dispatch pass due now (a slot for work was freed), when runs advance on a queue.
func (e *Engine) dispatch(ctx context.Context) error {
	if e.jobs == nil {
		return nil
	}
	return e.jobs.Dispatch(ctx)
}

// StopAgent ends the run's agent, if it is still there, keeping its working copy and conversation (a fenced
// host stops its agents before another host may take its runs).
func (e *Engine) StopAgent(ctx context.Context, r *store.Run) error { return e.runner(r).Stop(ctx, r) }

// Host is the name of the host this engine's runs live on.
func (e *Engine) Host() string { return e.o.Host }
