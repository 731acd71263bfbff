package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// A wake must never be lost. A run job (or a dispatch job) is unique over every unfinished state, running
// included, so an insert that arrives while the job runs is skipped as a duplicate, and River's JobRetry leaves a
// running job alone: a visit that loaded the run before an answer was sent, or a dispatch pass that listed the
// issues before a label landed, would end and sleep as if nothing happened (for a dispatch, until the next
// poll.interval). Such a wake is recorded instead as an `ace_wake` job beside the running one: it waits, in the
// database, until that job has left the running state, then makes it (or, once it finished, a new one) due at
// once. It outlives the process that asked (ace send, a webhook on another host).

// WakeArgs is the job that makes another job run again once the visit or pass it runs now has ended.
type WakeArgs struct {
	Job      int64  `json:"job" river:"unique"` // the job that was running when the wake came
	Dispatch bool   `json:"dispatch,omitempty"` // a dispatch job; else the run job of Repo#Issue
	Repo     string `json:"repo,omitempty"`
	Issue    int    `json:"issue,omitempty"`
}

// Kind names the job in River's tables; it never changes.
func (WakeArgs) Kind() string { return "ace_wake" }

// InsertOpts coalesces the wakes of one running job: one is enough. A wake that comes while the wake job itself
// looks at the target loses nothing either: that look either finds the target running (and looks again later)
// or finds it ended after the wake came, and makes it run again.
func (WakeArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{
		MaxAttempts: 25,
		UniqueOpts:  river.UniqueOpts{ByArgs: true, ByQueue: true, ByState: unfinishedJobStates},
	}
}

// wakeLook is how often a wake job looks whether its target still runs: the end of a visit is recorded by River
// within a fraction of a second, so the first looks come quickly; a long visit (a clone, a slow step) is looked
// at less often, up to every wakeLookMax.
const wakeLook, wakeLookMax = 100 * time.Millisecond, 2 * time.Second

// wakeLater records a wake for job, which is running now, in the job's own queue.
func (q *Queue) wakeLater(ctx context.Context, job *rivertype.JobRow, a WakeArgs) error {
	a.Job = job.ID
	if _, err := q.client.Insert(ctx, a, &river.InsertOpts{Queue: job.Queue}); err != nil {
		return fmt.Errorf("record a wake of job %d: %w", job.ID, err)
	}
	return nil
}

type wakeWorker struct {
	river.WorkerDefaults[WakeArgs]
	q *Queue
}

func (w *wakeWorker) Work(ctx context.Context, job *river.Job[WakeArgs]) error {
	return w.q.whenAway(ctx, w.q.wakeAfter(ctx, job.Args, time.Since(job.CreatedAt)))
}

func (w *wakeWorker) Timeout(*river.Job[WakeArgs]) time.Duration { return time.Minute }

// wakeAfter makes the target of a wake due once it no longer runs. A target still running snoozes the wake job (it
// holds no worker meanwhile); a target that finished is replaced by a new job, unless a new one exists already.
func (q *Queue) wakeAfter(ctx context.Context, a WakeArgs, waited time.Duration) error {
	target, err := q.client.JobGet(ctx, a.Job)
	if err != nil && !errors.Is(err, river.ErrNotFound) {
		return fmt.Errorf("look at job %d: %w", a.Job, err)
	}
	if target != nil && target.State == rivertype.JobStateRunning {
		return river.JobSnooze(min(max(waited/10, wakeLook), wakeLookMax))
	}
	if a.Dispatch {
		return q.Dispatch(ctx)
	}
	return q.Wake(ctx, a.Repo, a.Issue)
}
