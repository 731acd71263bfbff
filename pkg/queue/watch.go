package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// paneWatch keeps watching agents cheap. A run whose agent works in tmux would need a visit every
// monitor.interval to notice in time that its output settled, its pane died or it wrote .ace/DONE — a job fetch,
// a look and a snooze, each written to the database, per run per second. Instead such a run's job snoozes for a
// quiet interval, and one loop per process reads every pane at once (one `list-panes` over tmux's control
// connection) and stats the protocol files each monitor.interval, waking only the jobs whose agent changed in
// a way the monitor acts on. Nothing is written while agents just work.
type paneWatch struct {
	mu    sync.Mutex
	runs  map[int64]workflow.Held // by job ID
	kick  chan struct{}
	every time.Duration
}

func newPaneWatch(every time.Duration) *paneWatch {
	return &paneWatch{runs: map[int64]workflow.Held{}, kick: make(chan struct{}, 1), every: max(every, 50*time.Millisecond)}
}

// hold is called after a visit that left a tmux run monitoring: its job sleeps quietWait and the watch wakes it
// early when needed. It returns the snooze to use.
func (q *Queue) hold(jobID int64, r *store.Run, wait time.Duration) time.Duration {
	// Only an agent with a pane is watched (a tmux run); the others are looked at when their snooze ends.
	quiet, h, ok := q.e.Holdable(r, wait)
	if !ok {
		q.watch.drop(jobID)
		return wait
	}
	q.watch.mu.Lock()
	q.watch.runs[jobID] = h
	q.watch.mu.Unlock()
	return quiet
}

func (w *paneWatch) drop(jobID int64) {
	w.mu.Lock()
	delete(w.runs, jobID)
	w.mu.Unlock()
}

// run wakes held jobs whose agents changed, every monitor.interval, until ctx ends. It first takes over the held
// jobs of this host that an earlier ace process left snoozing (its watch went with it).
func (q *Queue) runPaneWatch(ctx context.Context) {
	if err := q.adoptHeld(ctx); err != nil && ctx.Err() == nil {
		q.o.Logger.WarnContext(ctx, "watch the agents an earlier ace left", "err", err)
	}
	t := time.NewTicker(q.watch.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for id, h := range q.watch.due(ctx, q.e) {
			job, err := q.client.JobRetry(ctx, id)
			switch {
			case err == nil && job != nil && job.State == rivertype.JobStateRunning:
				// River does not touch a running job: the visit that held it has not had its snooze written yet
				// (the store away, or just slow). Wake it once it has, not at the end of its snooze.
				q.watch.keep(id, h)
			case err == nil, errors.Is(err, river.ErrNotFound), ctx.Err() != nil:
			case store.Unavailable(err):
				// The store is away: wake the job once it is back, not at the end of its snooze.
				q.inTouch.Store(0)
				q.watch.keep(id, h)
			default:
				q.o.Logger.WarnContext(ctx, "wake a run's job", "job", id, "err", err)
			}
		}
	}
}

// adoptHeld watches the snoozing jobs of this host's monitored tmux runs, as hold would have: those an ace process
// that stopped (or was restarted while the store was away) left for their quiet interval. This process has not
// seen their agents yet, so the watch wakes each of them at its first look.
func (q *Queue) adoptHeld(ctx context.Context) error {
	res, err := q.client.JobList(ctx, river.NewJobListParams().Queues(q.host).Kinds(RunArgs{}.Kind()).
		States(rivertype.JobStateScheduled).First(1000))
	if err != nil {
		return fmt.Errorf("list snoozing jobs: %w", err)
	}
	for _, j := range res.Jobs {
		a, ok := decodeRunArgs(j)
		if !ok {
			continue
		}
		r, err := q.st.GetRun(ctx, a.Run)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if workflow.Step(r.Step) == workflow.StepMonitor && r.Session != "" && (r.Host == "" || r.Host == q.self) {
			q.watch.keep(j.ID, workflow.Held{RunID: r.ID, Session: r.Session, Workdir: r.Workdir, Until: j.ScheduledAt})
		}
	}
	return nil
}

// keep watches a job again that could not be woken (unless a visit held it anew meanwhile).
func (w *paneWatch) keep(jobID int64, h workflow.Held) {
	w.mu.Lock()
	if _, ok := w.runs[jobID]; !ok {
		w.runs[jobID] = h
	}
	w.mu.Unlock()
}

// due returns the held jobs to wake now, and forgets them (and those whose snooze has ended by itself).
func (w *paneWatch) due(ctx context.Context, e *workflow.Engine) map[int64]workflow.Held {
	w.mu.Lock()
	held := make(map[int64]workflow.Held, len(w.runs))
	for id, h := range w.runs {
		held[id] = h
	}
	w.mu.Unlock()
	if len(held) == 0 {
		return nil
	}
	now := time.Now()
	wake, err := e.Changed(ctx, held, now)
	if err != nil {
		return nil // tmux unreachable: the jobs wake at the end of their snooze and see for themselves
	}
	for id, h := range held {
		if _, woken := wake[id]; woken || now.After(h.Until) {
			w.drop(id)
		}
	}
	return wake
}
