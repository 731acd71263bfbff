package workflow

import (
	"context"
	"fmt"
	"time"

	"github.com/aceworks/ace/pkg/store"
)

// poll.max_concurrent bounds the agents alive on a host, whatever they wait for. A run holds a slot from its
// creation (or its move to the host) until it ends — except while it follows a pull request with its agent
// released: after pr.release_after without a round the agent is stopped (Runner.Stop) and the run keeps its
// working copy and its conversation (AgentSessionID), not a process. A round on such a run takes a slot again
// before its agent is restarted. Slots go in one order: rounds and runs moved from a dead host wait ahead of new
// issues (they are older work), rounds oldest first among themselves.

// holdsAgent reports whether a run counts against its host's slots.
func holdsAgent(r *store.Run) bool {
	if r.Status.Terminal() {
		return false
	}
	f := r.State.Follow
	return Step(r.Step) != StepFollowPR || f == nil || !f.Released || f.InRound
}

// hostLoad is what a host's slots hold: live agents, and released runs whose round waits for a slot.
type hostLoad struct {
	live    int
	waiting []*store.Run // rounds waiting for a slot, oldest first
	runs    []*store.Run // every unfinished run the host holds
}

// free is the slots left to new work: a waiting round comes first.
func (l hostLoad) free(capacity int) int { return capacity - l.live - len(l.waiting) }

func (q *Queue) hostLoad(ctx context.Context, host string) (hostLoad, error) {
	e := q.e
	runs, err := e.o.Store.ListRuns(ctx, store.Filter{Host: host,
		Statuses: []store.Status{store.StatusActive, store.StatusWaitingInput, store.StatusPausedLimit}})
	if err != nil {
		return hostLoad{}, fmt.Errorf("runs of host %s: %w", host, err)
	}
	l := hostLoad{runs: runs}
	for _, r := range runs {
		switch {
		case holdsAgent(r):
			l.live++
		case !r.State.Follow.WaitingSlot.IsZero():
			l.waiting = append(l.waiting, r)
		}
	}
	for i := 1; i < len(l.waiting); i++ { // insertion sort by waiting time: a handful at most
		for j := i; j > 0 && l.waiting[j].State.Follow.WaitingSlot.Before(l.waiting[j-1].State.Follow.WaitingSlot); j-- {
			l.waiting[j], l.waiting[j-1] = l.waiting[j-1], l.waiting[j]
		}
	}
	return l, nil
}

// takeSlot reports whether the round of released run r may start its agent now: this host has a free slot and
// no round waits for one since longer. Otherwise the round waits (f.WaitingSlot records since when).
func (q *Queue) takeSlot(ctx context.Context, r *store.Run, f *store.FollowState) (bool, error) {
	e := q.e
	capacity := e.cfg.Poll.MaxConcurrent
	if capacity <= 0 {
		return true, nil
	}
	l, err := q.hostLoad(ctx, e.o.Host)
	if err != nil {
		return false, err
	}
	ahead := 0
	for _, w := range l.waiting {
		if w.ID != r.ID && (f.WaitingSlot.IsZero() || w.State.Follow.WaitingSlot.Before(f.WaitingSlot)) {
			ahead++
		}
	}
	if l.live+ahead < capacity {
		return true, nil
	}
	if f.WaitingSlot.IsZero() {
		f.WaitingSlot = e.o.Now()
	}
	return false, nil
}

// slotWait is how often a round waiting for a slot looks again (a run that ends also wakes dispatch, not it).
func (q *Queue) slotWait() time.Duration {
	e := q.e
	return max(min(e.cfg.Poll.Interval.Duration, 10*time.Second), e.cfg.Monitor.Interval.Duration)
}

// release stops the agent of a followed pull request that has had no round for pr.release_after: the run keeps
// its working copy and conversation. It reports whether it did.
func (q *Queue) release(ctx context.Context, r *store.Run, f *store.FollowState) (bool, error) {
	e := q.e
	after := e.cfg.PR.ReleaseAfter.Duration
	if after <= 0 || f.Released || f.InRound || f.QuietSince.IsZero() || e.o.Now().Sub(f.QuietSince) < after {
		return false, nil
	}
	if err := e.runner(r).Stop(ctx, r); err != nil {
		return false, fmt.Errorf("release the agent: %w", err)
	}
	f.Released, f.ConversationOn = true, e.o.Host
	e.event(ctx, r, EventReleased, fmt.Sprintf("no round for %s (pr.release_after): agent stopped, its slot freed; "+
		"the working copy and conversation stay for the next round", after.Round(time.Second)))
	return true, nil
}
