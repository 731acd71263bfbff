package queue

import (
	"context"
	"time"

	"github.com/riverqueue/river"
)

// The store stays small: finished runs older than store.keep go with their events (an hourly job, enqueued by
// River's leader, so one host of a fleet does it), and River deletes its own finished jobs (riverRetention).

// PruneArgs is the job that deletes finished runs older than store.keep.
type PruneArgs struct{}

// Kind names the job in River's tables; it never changes.
func (PruneArgs) Kind() string { return "ace_prune" }

// InsertOpts keeps at most one prune queued, on the queue only `ace poll` works.
func (PruneArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{
		Queue:       dispatchQueue,
		MaxAttempts: 3,
		UniqueOpts:  river.UniqueOpts{ByArgs: true, ByState: unfinishedJobStates},
	}
}

// pruneEvery is how often finished runs are pruned.
const pruneEvery = time.Hour

// River's retention of its finished jobs. Nothing of ace reads a finished job: a completed one (a run that
// ended, a dispatch pass, a wake) goes after an hour; a cancelled or discarded one (ace stop, a job that failed
// for good) is kept a week for whoever looks into why.
const (
	completedJobRetention = time.Hour
	failedJobRetention    = 7 * 24 * time.Hour
)

// prunePeriodic is the hourly prune, when store.keep is set.
func (q *Queue) prunePeriodic() []*river.PeriodicJob {
	if q.cfg.Store.Keep.Duration <= 0 {
		return nil
	}
	return []*river.PeriodicJob{river.NewPeriodicJob(river.PeriodicInterval(pruneEvery),
		func() (river.JobArgs, *river.InsertOpts) { return PruneArgs{}, nil },
		&river.PeriodicJobOpts{RunOnStart: true, ID: "ace_prune"})}
}

type pruneWorker struct {
	river.WorkerDefaults[PruneArgs]
	q *Queue
}

func (w *pruneWorker) Work(ctx context.Context, _ *river.Job[PruneArgs]) error {
	return w.q.whenAway(ctx, w.q.prune(ctx))
}

func (w *pruneWorker) Timeout(*river.Job[PruneArgs]) time.Duration { return 10 * time.Minute }

// prune deletes the finished runs older than store.keep.
func (q *Queue) prune(ctx context.Context) error {
	keep := q.cfg.Store.Keep.Duration
	if keep <= 0 {
		return nil
	}
	start := time.Now()
	n, err := q.st.Prune(ctx, q.now().Add(-keep))
	if n > 0 || err != nil {
		q.o.Logger.InfoContext(ctx, "pruned finished runs", "runs", n, "older_than", keep, "took",
			time.Since(start).Round(time.Millisecond), "err", err)
	}
	return err
}
