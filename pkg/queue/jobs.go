package queue

import (
	"context"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// RunArgs is the River job that advances one run (one attempt at one issue). There is one such job per run at a
// time (unique over every unfinished state): it works the run's steps until one asks to wait, then snoozes for
// that long, so a run that waits (an agent starting or working, a human answering) holds no worker and never
// delays another run. The run's ID is part of the key: the job of an attempt that just ended (its visit still
// finishing) never stands in the way of the next attempt's.
type RunArgs struct {
	Repo  string `json:"repo" river:"unique"`
	Issue int    `json:"issue" river:"unique"`
	Run   int64  `json:"run" river:"unique"`
}

// Kind names the job in River's tables; it never changes.
func (RunArgs) Kind() string { return "ace_run" }

// DispatchArgs is the job that starts runs for newly labelled issues and makes sure every unfinished run has its
// run job. It runs periodically (every poll.interval, on the leader only), when a run ends (a slot is free) and
// when a webhook says something changed.
type DispatchArgs struct{}

// Kind names the job in River's tables; it never changes.
func (DispatchArgs) Kind() string { return "ace_dispatch" }

// dispatchQueue is the queue of dispatch jobs: only `ace poll` works it (a foreground `ace run` starts no other
// issue).
const dispatchQueue = "ace_dispatch"

// unfinishedJobStates are the job states that make a run or dispatch job unique: a finished job (completed,
// cancelled, discarded) does not stop the next attempt from being enqueued.
var unfinishedJobStates = []rivertype.JobState{
	rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable,
	rivertype.JobStateRunning, rivertype.JobStateScheduled,
}

// InsertOpts makes a run job unique per run and host queue: a run moved off a dead host gets a job on its new
// host's queue while the dead host's job (still "running" there) waits to be dropped. The queue is set by the
// Queue that inserts it (the run's host's).
func (RunArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{
		MaxAttempts: 25,
		UniqueOpts:  river.UniqueOpts{ByArgs: true, ByQueue: true, ByState: unfinishedJobStates},
	}
}

// InsertOpts keeps at most one dispatch job queued at a time.
func (DispatchArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{
		Queue:       dispatchQueue,
		MaxAttempts: 3,
		UniqueOpts:  river.UniqueOpts{ByArgs: true, ByState: unfinishedJobStates},
	}
}

type runWorker struct {
	river.WorkerDefaults[RunArgs]
	q *Queue
}

func (w *runWorker) Work(ctx context.Context, job *river.Job[RunArgs]) error {
	return w.q.advance(ctx, job.ID, job.Args)
}

// Timeout bounds one visit of a run: the sum of a few step timeouts (a visit works steps until one waits).
func (w *runWorker) Timeout(*river.Job[RunArgs]) time.Duration { return visitTimeout }

type dispatchWorker struct {
	river.WorkerDefaults[DispatchArgs]
	q *Queue
}

func (w *dispatchWorker) Work(ctx context.Context, _ *river.Job[DispatchArgs]) error {
	return w.q.dispatchPass(ctx)
}

func (w *dispatchWorker) Timeout(*river.Job[DispatchArgs]) time.Duration { return 10 * time.Minute }
