package queue

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// Hosts share one store in a fleet. Each heartbeats while its queue runs; a run belongs to the host that holds its
// agent session and working copy (store.Run.Host) and its jobs go to that host's queue. Dispatch gives a new run
// to the live host with the most free slots (its own poll.max_concurrent less its working runs and those waiting
// for a slot: an idle agent gives way to new work), where it takes a slot (workflow's slots.go); a host silent
// for host.dead_after has its runs moved to a live one, which starts each again from its pushed branch.

// heartbeats records this host as alive every quarter of host.dead_after, with its load, until ctx ends. While the
// database is away a heartbeat is tried every second; the outage is logged when it begins and when it ends, not at
// every try.
func (q *Queue) heartbeats(ctx context.Context) {
	go q.fenceWatch(ctx)
	every := max(q.cfg.Host.DeadAfter.Duration/4, 250*time.Millisecond)
	started := q.now()
	var lost time.Time // when the heartbeats began to fail
	for {
		err := q.heartbeat(ctx, started, every)
		wait := every
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			q.inTouch.Store(0)
			wait = min(every, time.Second)
			if lost.IsZero() {
				lost = time.Now()
				q.o.Logger.WarnContext(ctx, "heartbeat: the store does not answer; runs wait until it does", "host", q.self, "err", err)
			}
		default:
			if q.inTouch.Load() == 0 {
				q.inTouch.Store(q.now().UnixNano())
			}
			if !lost.IsZero() {
				q.o.Logger.InfoContext(ctx, "heartbeat: the store answers again", "host", q.self,
					"after", time.Since(lost).Round(time.Second))
				lost = time.Time{}
			}
			q.lift(ctx)
			if err := q.rescueDead(ctx); err != nil && ctx.Err() == nil {
				q.o.Logger.WarnContext(ctx, "free the jobs of dead ace processes", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// heartbeat records this host's load, within timeout: a connection to a database that vanished (no reset, no
// answer) must not hold the heartbeats up until the kernel gives up on it, while the other hosts take this one
// for dead.
func (q *Queue) heartbeat(ctx context.Context, started time.Time, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// The fence counts from no later than the stamp the other hosts see: on a loaded machine the write itself
	// took seconds, which counted from its end would have put the fence up that much later.
	at := time.Now()
	runs, err := q.st.ListRuns(ctx, store.Filter{Host: q.self, Statuses: unfinished})
	if err != nil {
		return fmt.Errorf("runs of host %s: %w", q.self, err)
	}
	live := 0
	for _, r := range runs {
		if r.Slot.Live() {
			live++
		}
	}
	if err := q.st.Heartbeat(ctx, store.Host{Name: q.self, StartedAt: started,
		MaxConcurrent: q.o.MaxConcurrent, Running: live}); err != nil {
		return err
	}
	q.fence.held(runs, at)
	return nil
}

// dead reports whether host h has been silent for host.dead_after while this process was in touch with the store
// (its own heartbeats succeeding). A host is not taken for dead for heartbeats it could not write because the
// database itself was away — a restart, a failover: when the database is back every heartbeat in it is old, and
// the hosts write new ones within a quarter of dead_after. Out of touch, this process takes no host for dead.
func (q *Queue) dead(h store.Host) bool {
	since := q.inTouch.Load()
	if since == 0 {
		return false
	}
	last := h.HeartbeatAt
	if t := time.Unix(0, since); t.After(last) {
		last = t
	}
	return q.now().Sub(last) >= q.cfg.Host.DeadAfter.Duration
}

// pickHost chooses the host a new run goes to: the live one with the most free slots, and of those the one with
// the fewest live agents (no idle agent need give way). ok is false when every live host is full. Before any host
// has a heartbeat (a first start), this host decides for itself.
func (q *Queue) pickHost(ctx context.Context, maxConcurrent int) (string, bool, error) {
	hosts, err := q.st.Hosts(ctx)
	if err != nil {
		return "", false, err
	}
	counts, err := q.st.Slots(ctx)
	if err != nil {
		return "", false, err
	}
	type slot struct {
		name       string
		free, live int
	}
	var live []slot
	self := false
	consider := func(name string, capacity int) {
		c := counts[name]
		if capacity <= 0 || c.Free(capacity) > 0 {
			live = append(live, slot{name, c.Free(capacity), c.Live()})
		}
	}
	for _, h := range hosts {
		if !q.alive(h) {
			continue
		}
		capacity := h.MaxConcurrent
		if h.Name == q.self {
			self, capacity = true, maxConcurrent
		}
		consider(h.Name, capacity)
	}
	if !self {
		consider(q.self, maxConcurrent)
	}
	if len(live) == 0 {
		return "", false, nil
	}
	sort.SliceStable(live, func(i, j int) bool {
		if live[i].free != live[j].free {
			return live[i].free > live[j].free
		}
		if live[i].live != live[j].live {
			return live[i].live < live[j].live
		}
		return live[i].name < live[j].name
	})
	return live[0].name, true, nil
}

// moveRunsOfDeadHosts gives the unfinished runs of every dead host (silent for host.dead_after) to live hosts. The
// new host starts each again from claim: a fresh working copy from the run's pushed branch, the agent
// started with a prompt to continue, the same status comment edited to say where the run went.
func (q *Queue) moveRunsOfDeadHosts(ctx context.Context) error {
	hosts, err := q.st.Hosts(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, h := range hosts {
		if h.Name == q.self || !q.dead(h) {
			continue
		}
		runs, err := q.st.ListRuns(ctx, store.Filter{Host: h.Name, Statuses: unfinished})
		if err != nil {
			return err
		}
		for _, r := range runs {
			to, ok, err := q.pickHost(ctx, q.o.MaxConcurrent)
			if err != nil {
				return err
			}
			if !ok {
				// Every live host is full: the run waits, on the dead host's books, for the next slot to free (a
				// run that ends dispatches at once); it goes before any new issue, as moves come first in a pass.
				return errors.Join(errs...)
			}
			why := fmt.Sprintf("host %s stopped answering (no heartbeat for %s): moved to %s, which continues from the pushed branch",
				h.Name, q.cfg.Host.DeadAfter.Duration, to)
			if err := q.e.MoveRun(ctx, r, to, workflow.EventMoved, why); err != nil {
				errs = append(errs, fmt.Errorf("%s#%d: %w", r.Repo, r.Issue, err))
			}
		}
	}
	return errors.Join(errs...)
}

// unfinished are the statuses of runs not ended yet.
var unfinished = []store.Status{store.StatusActive, store.StatusWaitingInput, store.StatusPausedLimit}

// alive reports whether a host's last heartbeat is recent enough.
func (q *Queue) alive(h store.Host) bool {
	return q.now().Sub(h.HeartbeatAt) < q.cfg.Host.DeadAfter.Duration
}
