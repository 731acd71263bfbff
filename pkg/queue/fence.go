package queue

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// A host that cannot write its heartbeat is about to be taken for dead: after host.dead_after without one, another
// host moves its runs and starts their agents again there. So that two agents never work one issue, the host
// fences itself first: once half of dead_after has passed since its last heartbeat it takes no step and stops
// its agents (Runner.Stop: their working copies and conversations stay, for whoever continues). Every push also
// checks, right before it, that this host still holds the run (pushFenced). When the store answers again the
// fence lifts: each run whose agent it stopped and that this host still holds starts again from its working
// copy; those moved away are the other hosts' now. (Freezing the agents with SIGSTOP instead, so that a
// database restart would cost no agent its work, does not hold: tmux continues a pane's stopped process at
// once.)

// fencedSnooze is how long a visit behind the fence puts its run off.
const fencedSnooze = 2 * time.Second

// fence is a host's fence and what it needs to put it up without the store: the runs this host holds, as the
// last heartbeat listed them and as each visit since left them (a run dispatched after that heartbeat).
type fence struct {
	up       atomic.Bool
	mu       sync.Mutex
	lastBeat time.Time            // the last heartbeat written
	runs     map[int64]*store.Run // the runs this host holds, by ID
	stopped  []*store.Run         // the runs whose agents the fence stopped
	toStop   []*store.Run         // of those, the ones whose stop has not succeeded yet
}

// held records a heartbeat written, stamped at (before the write: other hosts count from its stamp), and the runs
// this host holds.
func (f *fence) held(runs []*store.Run, at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastBeat = at
	f.runs = make(map[int64]*store.Run, len(runs))
	for _, r := range runs {
		f.runs[r.ID] = r
	}
}

// visited records run r as a visit of this host left it (a copy: the visit goes on with r).
func (f *fence) visited(r *store.Run) {
	c := *r
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.runs == nil {
		f.runs = map[int64]*store.Run{}
	}
	if r.Status.Terminal() {
		delete(f.runs, r.ID)
		return
	}
	f.runs[r.ID] = &c
}

// due is when the fence goes up unless a heartbeat is written first: half of host.dead_after after the last one;
// false before the first heartbeat and while the fence is up.
func (f *fence) due(half time.Duration) (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.up.Load() || f.lastBeat.IsZero() {
		return time.Time{}, false
	}
	return f.lastBeat.Add(half), true
}

// fenceWatch puts the fence up the moment half of host.dead_after has passed since the last heartbeat, and while
// it is up tries a failed stop again every second, until ctx ends. It waits for no heartbeat to fail first: on a
// loaded machine a failing heartbeat took a second or more (each a new connection refused), the fence went up
// that much late (6 s after the last heartbeat of a 10 s dead_after), and the agents' stop had only what was
// left before another host moved their runs.
func (q *Queue) fenceWatch(ctx context.Context) {
	half := q.cfg.Host.DeadAfter.Duration / 2
	for {
		wait := time.Second
		if due, ok := q.fence.due(half); ok {
			wait = time.Until(due)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		q.fenceIfCutOff(ctx)
	}
}

// fenceIfCutOff puts the fence up once half of host.dead_after has passed since the last heartbeat: no more
// steps, and this host's agents stopped, well before another host may move its runs. The agents are stopped at
// once, side by side; one whose stop failed (tmux slow to answer on a loaded machine) is tried again at the next
// call (fenceWatch: a second later).
func (q *Queue) fenceIfCutOff(ctx context.Context) {
	f := &q.fence
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.up.Load() {
		if f.lastBeat.IsZero() || time.Since(f.lastBeat) < q.cfg.Host.DeadAfter.Duration/2 {
			return
		}
		if q.stopping.Load() {
			// An ace on its way out leaves its agents running, as every stopped ace does (the next one takes
			// them on, or another host once this one is dead): its fence would stop what it means to keep.
			return
		}
		f.up.Store(true)
		q.o.Logger.WarnContext(ctx, "cut off from the store: this host takes no step and stops its agents before other hosts may move its runs",
			"host", q.self, "since", time.Since(f.lastBeat).Round(time.Second), "runs", len(f.runs))
		for _, r := range f.runs {
			if r.Slot.Live() { // an agent working, or kept idle
				f.toStop = append(f.toStop, r)
				f.stopped = append(f.stopped, r)
			}
		}
	}
	if len(f.toStop) == 0 {
		return
	}
	failed := make([]bool, len(f.toStop))
	var wg sync.WaitGroup
	for i, r := range f.toStop {
		wg.Go(func() {
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if err := q.e.StopAgent(sctx, r); err != nil {
				q.o.Logger.WarnContext(ctx, "fence: stop an agent (tried again in a second)", "repo", r.Repo,
					"issue", r.Issue, "err", err)
				failed[i] = true
			}
		})
	}
	wg.Wait()
	var again []*store.Run
	for i, r := range f.toStop {
		if failed[i] {
			again = append(again, r)
		}
	}
	f.toStop = again
}

// lift takes the fence down once a heartbeat is written again: each run whose agent it stopped and that this
// host still holds starts again from its working copy; the others moved away.
func (q *Queue) lift(ctx context.Context) {
	f := &q.fence
	f.mu.Lock()
	if !f.up.Load() {
		f.mu.Unlock()
		return
	}
	stopped := f.stopped
	f.stopped, f.toStop = nil, nil
	f.up.Store(false)
	f.mu.Unlock()
	q.o.Logger.InfoContext(ctx, "the store answers again: this host takes steps again", "host", q.self, "agents stopped", len(stopped))
	for _, r := range stopped {
		fresh, err := q.st.GetRun(ctx, r.ID)
		if err != nil || fresh.Host != q.self || fresh.Status.Terminal() {
			continue
		}
		why := fmt.Sprintf("host %s was cut off from the store, so it stopped this run's agent; it continues from its working copy", q.self)
		if err := q.e.MoveRun(ctx, fresh, q.self, workflow.EventFenced, why); err != nil {
			q.o.Logger.WarnContext(ctx, "restart a run after the fence", "repo", r.Repo, "issue", r.Issue, "err", err)
		}
	}
}
