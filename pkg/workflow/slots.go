package workflow

import (
	"context"
	"fmt"
	"time"

	"github.com/aceworks/ace/pkg/store"
)

// slots bound the agents a host runs at once (poll.max_concurrent): a released run's round waits for one.
type slots struct{ e *Engine }

// poll.max_concurrent bounds the agents alive on a host, whatever they wait for. A run holds a slot from its
// creation (or its move to the host) until it ends — except while it follows a pull request with its agent
// released: after pr.release_after without a round the agent is stopped (Runner.Stop) and the run keeps its
// working copy and its conversation (AgentSessionID), not a process. A round on such a run takes a slot again
// before its agent is restarted. Slots go in one order: rounds and runs moved from a dead host wait ahead of new
// issues (they are older work), rounds oldest first among themselves.

// holdsAgent reports whether a run counts against its host's slots.
func HoldsAgent(r *store.Run) bool {
	if r.Status.Terminal() {
		return false
	}
	f := r.State.Follow
	return Step(r.Step) != StepFollowPR || f == nil || !f.Released || f.InRound
}

// hostLoad is what a host's slots hold: live agents, and released runs whose round waits for a slot.
type Load struct {
	Live    int
	Waiting []*store.Run // rounds waiting for a slot, oldest first
	Runs    []*store.Run // every unfinished run the host holds
}

// free is the slots left to new work: a waiting round comes first.
func (l Load) Free(capacity int) int { return capacity - l.Live - len(l.Waiting) }

func HostLoad(ctx context.Context, st RunLister, host string) (Load, error) {
	runs, err := st.ListRuns(ctx, store.Filter{Host: host,
		Statuses: []store.Status{store.StatusActive, store.StatusWaitingInput, store.StatusPausedLimit}})
	if err != nil {
		return Load{}, fmt.Errorf("runs of host %s: %w", host, err)
	}
	l := Load{Runs: runs}
	for _, r := range runs {
		switch {
		case HoldsAgent(r):
			l.Live++
		case !r.State.Follow.WaitingSlot.IsZero():
			l.Waiting = append(l.Waiting, r)
		}
	}
	for i := 1; i < len(l.Waiting); i++ { // insertion sort by waiting time: a handful at most
		for j := i; j > 0 && l.Waiting[j].State.Follow.WaitingSlot.Before(l.Waiting[j-1].State.Follow.WaitingSlot); j-- {
			l.Waiting[j], l.Waiting[j-1] = l.Waiting[j-1], l.Waiting[j]
		}
	}
	return l, nil
}

// takeSlot reports whether the round of released run r may start its agent now: this host has a free slot and
// no round waits for one since longer. Otherwise the round waits (f.WaitingSlot records since when).
func (sl *slots) takeSlot(ctx context.Context, r *store.Run, f *store.FollowState) (bool, error) {
	e := sl.e
	capacity := e.cfg.Poll.MaxConcurrent
	if capacity <= 0 {
		return true, nil
	}
	l, err := HostLoad(ctx, e.o.Store, e.o.Host)
	if err != nil {
		return false, err
	}
	ahead := 0
	for _, w := range l.Waiting {
		if w.ID != r.ID && (f.WaitingSlot.IsZero() || w.State.Follow.WaitingSlot.Before(f.WaitingSlot)) {
			ahead++
		}
	}
	if l.Live+ahead < capacity {
		return true, nil
	}
	if f.WaitingSlot.IsZero() {
		f.WaitingSlot = e.o.Now()
	}
	return false, nil
}

// slotWait is how often a round waiting for a slot looks again (a run that ends also wakes dispatch, not it).
func (sl *slots) slotWait() time.Duration {
	e := sl.e
	return max(min(e.cfg.Poll.Interval.Duration, 10*time.Second), e.cfg.Monitor.Interval.Duration)
}

// releaseWorking bounds how long a release waits for the agent's turn to end.
const releaseWorking = 2 * time.Minute

// release stops the agent of a followed pull request that has had no round for pr.release_after: the run keeps
// its working copy and conversation. It reports whether it did.
func (sl *slots) release(ctx context.Context, r *store.Run, f *store.FollowState) (bool, error) {
	e := sl.e
	after := e.cfg.PR.ReleaseAfter.Duration
	if after <= 0 || f.Released || f.InRound || f.QuietSince.IsZero() || e.o.Now().Sub(f.QuietSince) < after {
		return false, nil
	}
	// Not in the middle of a turn: gemini, released a second after it wrote .ace/DONE on a loaded machine, had
	// not recorded its last reply, and the next round's prompt, in the conversation resumed without it, was
	// answered as the end of the round before. An agent still working releaseWorking later goes all the same.
	if e.o.Now().Sub(f.QuietSince) < after+releaseWorking && e.runner(r).Working(ctx, r) {
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

// RunLister is the part of the store a host's load is read from.
type RunLister interface {
	ListRuns(ctx context.Context, f store.Filter) ([]*store.Run, error)
}

// HostSlots is a host's slots as people are shown them (ace hosts, ace ls, the dashboard): its live agents
// against its poll.max_concurrent, the rounds of released runs waiting for a slot, and the working copies it
// holds — every unfinished run's, released ones included, which keep theirs for their next round.
type HostSlots struct {
	store.Host
	Alive   bool `json:"alive"`
	Live    int  `json:"live_agents"`
	Waiting int  `json:"waiting_rounds"`
	Held    int  `json:"held_working_copies"`
}

// FleetReader is the part of the store the fleet's slots are read from.
type FleetReader interface {
	RunLister
	Hosts(ctx context.Context) ([]store.Host, error)
}

// FleetSlots reads every host's slots now; a host silent for deadAfter is not alive.
func FleetSlots(ctx context.Context, st FleetReader, deadAfter time.Duration, now time.Time) ([]HostSlots, error) {
	hosts, err := st.Hosts(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]HostSlots, 0, len(hosts))
	for _, h := range hosts {
		l, err := HostLoad(ctx, st, h.Name)
		if err != nil {
			return nil, err
		}
		held := 0
		for _, r := range l.Runs {
			if r.Workdir != "" {
				held++
			}
		}
		out = append(out, HostSlots{Host: h, Alive: now.Sub(h.HeartbeatAt) < deadAfter, Live: l.Live,
			Waiting: len(l.Waiting), Held: held})
	}
	return out, nil
}

// Describe says what the host's slots hold, in a line: "2/4 agents live, 1 round waiting, 7 working copies held".
func (h HostSlots) Describe() string {
	s := fmt.Sprintf("%d/%d agents live", h.Live, h.MaxConcurrent)
	if h.MaxConcurrent <= 0 {
		s = fmt.Sprintf("%d agents live (no poll.max_concurrent)", h.Live)
	}
	if h.Waiting > 0 {
		s += fmt.Sprintf(", %d %s waiting for a slot", h.Waiting, plural(h.Waiting, "round", "rounds"))
	}
	return s + fmt.Sprintf(", %d working %s held", h.Held, plural(h.Held, "copy", "copies"))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
