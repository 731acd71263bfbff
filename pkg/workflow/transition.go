package workflow

import (
	"fmt"

	"github.com/aceworks/ace/pkg/store"
)

// transition is the one writer of a run's step and status. It checks the move — a finished run never moves
// again, and a status must fit its step — and returns the event that records it, which the caller saves with
// the run in one transaction (Store.UpdateRun): the engine after a visit (Engine.Step), updateFresh for ace
// stop and ace send, the fleet when it moves a dead host's runs. status "" keeps the run's status where it fits
// the new step; a run that leaves the step of its waiting or paused status (the issue closed meanwhile, say) is
// active again.
func transition(r *store.Run, to Step, status store.Status) (*store.Event, error) {
	from, was := Step(r.Step), r.Status
	if status == "" {
		status = was
		if !was.Terminal() && !fits(was, to) {
			status = store.StatusActive
		}
	}
	if was.Terminal() && (status != was || to != from) {
		return nil, fmt.Errorf("run %d is %s: no move to %s (%s)", r.ID, was, to, status)
	}
	if !fits(status, to) {
		return nil, fmt.Errorf("run %d: status %s does not belong at step %s", r.ID, status, to)
	}
	if from == to && status == was {
		return nil, nil
	}
	r.Step, r.Status = string(to), status
	msg := string(from) + " → " + string(to)
	if status != was {
		msg += fmt.Sprintf(" (%s → %s)", was, status)
	}
	return &store.Event{Kind: "transition", Step: string(to), Message: msg}, nil
}

// fits reports whether a run may have status at step.
func fits(status store.Status, step Step) bool {
	if status == store.StatusPausedLimit {
		return step == StepMonitor // a usage-limit pause holds a working agent
	}
	want, ok := stepOf(status)
	return !ok || want == step
}

// stepOf is the step a run with status is at; ok is false for the statuses of a run at work (active, paused).
func stepOf(status store.Status) (step Step, ok bool) {
	switch status {
	case store.StatusWaitingInput:
		return StepWaitingInput, true
	case store.StatusDone:
		return StepDone, true
	case store.StatusFailed:
		return StepFailed, true
	case store.StatusCancelled:
		return StepCancelled, true
	case store.StatusClosed:
		return StepFollowPR, true
	}
	return "", false
}
