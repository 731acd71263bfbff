package workflow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
)

// slots give a host's poll.max_concurrent to work. poll.max_concurrent bounds the agents alive on a host, but a
// slot is held for work: a run takes one before its agent starts — a new run, one moved to the host, a round of
// its pull request, an answer, the resume after a usage limit — and holds it while its agent works. A run that
// waits — its pull request followed between rounds, a human asked in words (its .ace/QUESTION, its budget), a
// usage limit's pause — keeps its agent alive while nobody needs the slot (idle), so that a round or an answer
// soon goes to the live process; the moment a run needs a slot and none is free, the longest idle agent gives
// way: it is stopped (released), its run keeps its working copy and conversation, and its next round, answer or
// resume takes a slot again and starts the agent in its conversation (the CLI's own continue). pr.release_after
// bounds how long an idle agent is kept when nobody needs its slot.
//
// Who holds what is the store's (store.Slot, beside each run's row): every slot is given by store.TakeSlot, one
// transaction under the host's lock, from what the host's runs hold right then, so no process or host can give
// a slot twice; an agent is stopped before its slot is given again (evict, then none), so a crash between the
// two leaves the slot held, and whoever looks next once store.EvictGrace has passed (the run's own visit, the
// next TakeSlot) stops it again.
type slots struct {
	core  slotsCore
	store slotsStore
	cfg   *config.Config // poll.max_concurrent, pr.release_after, the intervals
	now   func() time.Time
	log   *slog.Logger
}

// slotsCore is what slots need of the engine's core: the run's events, its runner (to stop an agent, to ask
// whether it works), and a dispatch pass made due.
type slotsCore interface {
	event(ctx context.Context, r *store.Run, kind EventKind, msg string)
	runner(r *store.Run) Runner
	dispatch(ctx context.Context) error
}

// slotsStore is the store's slots: the one transaction that gives them, and a run's slot changed.
type slotsStore interface {
	TakeSlot(ctx context.Context, r *store.Run, capacity int) (store.SlotTake, error)
	SetSlot(ctx context.Context, r *store.Run, to store.Slot, from ...store.Slot) (bool, error)
}

// waits reports whether run r has nothing for its agent to do: its pull request is followed between rounds, it
// waits for a human on what its agent said in words, or for a usage limit's reset. Its agent holds an idle slot,
// which a run that needs it takes.
func waits(r *store.Run) bool {
	switch {
	case r.Status.Terminal():
		return false
	case r.Status == store.StatusPausedLimit:
		return true
	case r.Status == store.StatusWaitingInput:
		return r.State.InWords // a screen only its process shows (a dialog, a permission) keeps it working
	case Step(r.Step) == StepBestOf:
		return true // a best-of parent has no agent: its attempts hold a slot each (bestof.go)
	}
	return Step(r.Step) == StepFollowPR && (r.State.Follow == nil || !r.State.Follow.InRound)
}

// needsSlot reports whether r must hold a working slot before its step runs.
func needsSlot(r *store.Run) bool {
	s := Step(r.Step)
	return !r.Status.Terminal() && !waits(r) && s != StepFailed && s != StepCancelled
}

// gate is the engine's look before a step: a run that works without a working slot (a new run, one moved here, one
// sent back to work) takes one first, or waits for it. wait is false when the step may run.
func (sl *slots) gate(ctx context.Context, r *store.Run) (res Result, wait bool, err error) {
	if !needsSlot(r) || r.Slot == store.SlotWork {
		return Result{}, false, nil
	}
	ok, err := sl.acquire(ctx, r)
	if errors.Is(err, store.ErrConflict) {
		return Stay(time.Second), true, nil // the run moved or ended meanwhile: the next visit reads it anew
	}
	if err != nil || ok {
		return Result{}, false, err
	}
	return Stay(sl.slotWait()), true, nil
}

// acquire gives r a working slot on its host, stopping the idle agents that give way to it, and reports whether
// r holds one now. A run whose own agent was released (stopped for its slot) is marked so (Released): its agent
// starts again in its conversation.
func (sl *slots) acquire(ctx context.Context, r *store.Run) (bool, error) {
	for range 3 {
		t, err := sl.store.TakeSlot(ctx, r, sl.cfg.Poll.MaxConcurrent)
		if err != nil {
			return false, err
		}
		switch {
		case t.Evicted: // its own idle agent gives way to a run that asked first: it goes, then r asks again
			if err := sl.release(ctx, r, "its idle agent gave way to a run that needed its slot"); err != nil {
				return false, err
			}
			continue
		case t.Granted:
			if (t.Was == store.SlotNone || t.Was == store.SlotWait) && r.Session != "" && Describe(r).IdleProcess() {
				r.State.Released = true
			}
			return true, nil
		case len(t.Evict) == 0:
			if t.Was != store.SlotWait {
				sl.core.event(ctx, r, EventSlotWait, fmt.Sprintf("waiting for a slot on host %s: %d of %d agents work, %d %s waiting before it",
					r.Host, t.Live, sl.cfg.Poll.MaxConcurrent, t.Ahead, plural(t.Ahead, "run", "runs")))
			}
			return false, nil
		}
		for _, x := range t.Evict {
			why := fmt.Sprintf("its idle agent gave way to %s#%d, which needed a slot on host %s", r.Repo, r.Issue, r.Host)
			if err := sl.release(ctx, x, why); err != nil {
				sl.log.WarnContext(ctx, "stop an idle agent for a run that needs its slot (tried again)", "run", x.ID, "err", err)
			}
		}
	}
	return false, nil
}

// release stops the idle agent of run x, which holds its slot as evict, and frees the slot: x keeps its working
// copy and its conversation for its next round, answer or resume. A stop that fails leaves the slot held, to be
// stopped again by whoever looks next.
func (sl *slots) release(ctx context.Context, x *store.Run, why string) error {
	if err := sl.core.runner(x).Stop(ctx, x); err != nil {
		return fmt.Errorf("release the agent of %s#%d: %w", x.Repo, x.Issue, err)
	}
	ok, err := sl.store.SetSlot(ctx, x, store.SlotNone, store.SlotEvict)
	if err != nil || !ok {
		return err
	}
	sl.core.event(ctx, x, EventReleased, why+": agent stopped; the working copy and conversation stay for what comes next")
	return nil
}

// settle keeps what r holds of its host's slots true to what it does after a step: a run that now waits keeps
// its agent idle — or none, where its runner's process ends with its turn — and frees its slot for work (a
// dispatch pass gives it out); an idle agent asked to give way, or kept for pr.release_after, is stopped. left
// is how long r's idle agent may still be kept (0: no bound).
func (sl *slots) settle(ctx context.Context, r *store.Run) (left time.Duration) {
	var err error
	switch {
	case r.Status.Terminal():
		return 0
	case r.Slot == store.SlotEvict && sl.now().Sub(r.SlotAt) > store.EvictGrace:
		// Marked to give way, and the run that needs the slot did not stop it (it stops its own at once): a crash.
		err = sl.release(ctx, r, "its idle agent gave way to a run that needed its slot")
	case waits(r) && r.Slot == store.SlotWork:
		to := store.SlotNone
		if Describe(r).IdleProcess() {
			to = store.SlotIdle
		}
		var ok bool
		if ok, err = sl.store.SetSlot(ctx, r, to, store.SlotWork); ok {
			err = sl.core.dispatch(ctx) // a slot for work is free
		}
	}
	if err != nil {
		sl.log.WarnContext(ctx, "keep the run's slot", "run", r.ID, "err", err)
	}
	after := sl.cfg.PR.ReleaseAfter.Duration
	if after <= 0 || r.Slot != store.SlotIdle || !waits(r) {
		return 0
	}
	if left = after - sl.now().Sub(r.SlotAt); left > 0 {
		return left
	}
	// Not in the middle of a turn: gemini, released a second after it wrote .ace/DONE on a loaded machine, had
	// not recorded its last reply, and the next round's prompt, in the conversation resumed without it, was
	// answered as the end of the round before. An agent still working releaseWorking later goes all the same.
	if -left < releaseWorking && sl.core.runner(r).Working(ctx, r) {
		return sl.cfg.Monitor.Interval.Duration
	}
	if ok, err := sl.store.SetSlot(ctx, r, store.SlotEvict, store.SlotIdle); err != nil || !ok {
		return 0
	}
	if err := sl.release(ctx, r, fmt.Sprintf("idle for %s (pr.release_after)", after.Round(time.Second))); err != nil {
		sl.log.WarnContext(ctx, "release an idle agent", "run", r.ID, "err", err)
	}
	return 0
}

// releaseWorking bounds how long a release for pr.release_after waits for the agent's turn to end.
const releaseWorking = 2 * time.Minute

// slotWait is how often a run waiting for a slot looks again: a dispatch pass after a slot frees wakes it sooner.
func (sl *slots) slotWait() time.Duration {
	return max(min(sl.cfg.Poll.Interval.Duration, 10*time.Second), sl.cfg.Monitor.Interval.Duration)
}

// AgentReleased reports whether the run's agent is stopped to free its slot, its working copy and conversation
// kept for what comes next (or it waits for a slot to start it again).
func AgentReleased(r *store.Run) bool {
	return !r.Status.Terminal() && waits(r) && !r.Slot.Live()
}
