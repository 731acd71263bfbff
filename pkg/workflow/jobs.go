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

var errNoJobs = errors.New("workflow: no job queue")
