package workflow

import (
	"context"

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
	step := StepClaim // idempotent: the issue read again, then a fresh working copy from the pushed branch
	if Step(r.Step) == StepFollowPR {
		step = StepFollowPR
		if f := cloneFollow(s.Follow); f != nil && !f.InRound {
			f.Released = true // no agent on the new host until a round takes a slot there
			s.Follow = f
		}
	}
	if _, err := transition(r, step, store.StatusActive); err != nil {
		return err
	}
	if err := e.o.Store.UpdateRun(ctx, r, &store.Event{Kind: string(kind), Step: r.Step, Message: why}); err != nil {
		return err
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
