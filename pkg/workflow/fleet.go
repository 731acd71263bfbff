package workflow

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/aceworks/ace/pkg/store"
)

// Hosts share one store in a fleet. Each heartbeats while its queue runs; a run belongs to the host that holds its
// agent session and working copy (store.Run.Host) and its jobs go to that host's queue. Dispatch gives a new run
// to the live host with the most free slots (its own poll.max_concurrent less the runs it holds); a host silent
// for host.dead_after has its runs moved to a live one, which starts each again from its pushed branch.

// heartbeats records this host as alive every quarter of host.dead_after, with its load, until ctx ends.
func (q *Queue) heartbeats(ctx context.Context) {
	every := max(q.e.cfg.Host.DeadAfter.Duration/4, 250*time.Millisecond)
	started := q.e.o.Now()
	for {
		held, err := q.e.o.Store.CountHeld(ctx, q.e.o.Host, string(StepFollowPR))
		if err == nil {
			err = q.e.o.Store.Heartbeat(ctx, store.Host{Name: q.e.o.Host, StartedAt: started,
				MaxConcurrent: q.o.MaxConcurrent, Running: held})
		}
		if err != nil && ctx.Err() == nil {
			q.o.Logger.WarnContext(ctx, "heartbeat", "host", q.e.o.Host, "err", err)
		}
		if err := q.rescueDead(ctx); err != nil && ctx.Err() == nil {
			q.o.Logger.WarnContext(ctx, "free the jobs of dead ace processes", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

// alive reports whether a host's last heartbeat is recent enough.
func (e *Engine) alive(h store.Host) bool {
	return e.o.Now().Sub(h.HeartbeatAt) < e.cfg.Host.DeadAfter.Duration
}

// pickHost chooses the host a new run goes to: the live one with the most free slots. ok is false when every
// live host is full. Before any host has a heartbeat (a first start), this host decides for itself.
func (e *Engine) pickHost(ctx context.Context, maxConcurrent int) (string, bool, error) {
	hosts, err := e.o.Store.Hosts(ctx)
	if err != nil {
		return "", false, err
	}
	type slot struct {
		name string
		free int
	}
	var live []slot
	self := false
	for _, h := range hosts {
		if !e.alive(h) {
			continue
		}
		capacity := h.MaxConcurrent
		if h.Name == e.o.Host {
			self, capacity = true, maxConcurrent
		}
		held, err := e.o.Store.CountHeld(ctx, h.Name, string(StepFollowPR))
		if err != nil {
			return "", false, err
		}
		if capacity <= 0 || held < capacity {
			live = append(live, slot{h.Name, capacity - held})
		}
	}
	if !self {
		held, err := e.o.Store.CountHeld(ctx, e.o.Host, string(StepFollowPR))
		if err != nil {
			return "", false, err
		}
		if maxConcurrent <= 0 || held < maxConcurrent {
			live = append(live, slot{e.o.Host, maxConcurrent - held})
		}
	}
	if len(live) == 0 {
		return "", false, nil
	}
	sort.SliceStable(live, func(i, j int) bool {
		if live[i].free != live[j].free {
			return live[i].free > live[j].free
		}
		return live[i].name < live[j].name
	})
	return live[0].name, true, nil
}

// moveRunsOfDeadHosts gives the unfinished runs of every host silent for host.dead_after to live hosts. The
// new host starts each again from claim: a fresh working copy from the run's pushed branch, the agent
// started with a prompt to continue, the same status comment edited to say where the run went.
func (q *Queue) moveRunsOfDeadHosts(ctx context.Context) error {
	e := q.e
	hosts, err := e.o.Store.Hosts(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, h := range hosts {
		if h.Name == e.o.Host || e.alive(h) {
			continue
		}
		runs, err := e.o.Store.ListRuns(ctx, store.Filter{Host: h.Name, Statuses: []store.Status{store.StatusActive, store.StatusWaitingInput}})
		if err != nil {
			return err
		}
		for _, r := range runs {
			to, ok, err := e.pickHost(ctx, q.o.MaxConcurrent)
			if err != nil {
				return err
			}
			if !ok {
				to = e.o.Host // every live host is full: the run must go on somewhere
			}
			if err := e.moveRun(ctx, r, to); err != nil {
				errs = append(errs, fmt.Errorf("%s#%d: %w", r.Repo, r.Issue, err))
			}
		}
	}
	return errors.Join(errs...)
}

// moveRun hands a run of a dead host to host to, and enqueues it there.
func (e *Engine) moveRun(ctx context.Context, r *store.Run, to string) error {
	from := r.Host
	r.Host = to
	r.Status = store.StatusActive
	r.Session, r.Workdir, r.AgentSessionID = "", "", ""
	s := &r.State
	s.PromptDelivered, s.Resume = false, true
	s.DeliverSince, s.Dialog, s.DialogScreen, s.DialogAt = time.Time{}, "", "", time.Time{}
	s.ExecProc, s.ExecTurn, s.ExecSeen, s.ExecFormat, s.Transcript = "", 0, 0, "", ""
	s.CompactAt, s.HasCompactAt, s.Compacting = 0, false, false
	if Step(r.Step) != StepFollowPR {
		r.Step = string(StepClaim) // idempotent: the issue read again, then a fresh working copy from the pushed branch
	}
	msg := fmt.Sprintf("host %s stopped answering (no heartbeat for %s): moved to %s, which continues from the pushed branch",
		from, e.cfg.Host.DeadAfter.Duration, to)
	if err := e.o.Store.UpdateRun(ctx, r, &store.Event{Kind: string(EventMoved), Step: r.Step, Message: msg}); err != nil {
		return err
	}
	e.notify(Progress{Run: r, Kind: EventMoved, Step: Step(r.Step), Message: msg})
	if err := e.postStatus(ctx, r, statusView{Headline: "moved to host " + to + " (" + from + " stopped answering)"}); err != nil {
		e.log.WarnContext(ctx, "status comment of a moved run", "run", r.ID, "err", err)
	}
	return e.queue.Enqueue(ctx, r)
}
