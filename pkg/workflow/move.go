package workflow

import (
	"context"
	"time"

	"github.com/aceworks/ace/pkg/store"
)

// MoveRun gives a run to host to — from a dead host (EventMoved), or back to this one after its fence stopped
// the agent (EventFenced) — to start again from its working copy or pushed branch, and enqueues it there; why
// is the event's message. What was the old agent process's is dropped (RunState.DropAgent).
func (e *Engine) MoveRun(ctx context.Context, r *store.Run, to string, kind EventKind, why string) error {
	from := r.Host
	r.Host = to
	r.Session, r.Workdir, r.AgentSessionID = "", "", ""
	s := &r.State
	s.DropAgent()
	if w := s.Workflow; w != nil && from != to {
		// The new host's working copy is a new one: the repository's setup runs there again.
		w = cloneWorkflowState(w)
		w.SetupDone = false
		s.Workflow = w
	}
	step := StepClaim // idempotent: the issue read again, then a fresh working copy from the pushed branch
	if Step(r.Step) == StepFollowPR {
		step = StepFollowPR
	}
	if _, err := transition(r, step, store.StatusActive); err != nil {
		return err
	}
	// The slot it holds on its new host (written with the move): it waits for one to work in, in order from now;
	// a followed pull request between rounds needs none until a round takes one there.
	r.Slot, r.SlotAt = store.SlotWait, e.o.Now()
	if waits(r) {
		r.Slot, r.SlotAt = store.SlotNone, time.Time{}
	}
	if err := e.o.Store.UpdateRun(ctx, r, &store.Event{Kind: string(kind), Step: r.Step, Message: why}); err != nil {
		return err
	}
	if from == to && waits(r) {
		// Back on its own host after the fence stopped its agent, which it needs no more until a round: its slot
		// goes (a run that starts again from claim keeps its own, for the agent it starts).
		if _, err := e.o.Store.SetSlot(ctx, r, store.SlotNone, store.SlotWork, store.SlotIdle, store.SlotEvict); err != nil {
			return err
		}
	}
	e.notify(Progress{Run: r, Kind: kind, Step: Step(r.Step), Message: why})
	headline := "moved to host " + to + " (" + from + " stopped answering)"
	if from == to {
		headline = "continuing on host " + to + " (it was cut off from the store)"
	}
	if err := e.status.postStatus(ctx, r, statusView{Headline: headline}); err != nil {
		e.log.WarnContext(ctx, "status comment of a moved run", "run", r.ID, "err", err)
	}
	return e.enqueue(ctx, r)
}
