package workflow

import (
	"testing"

	"github.com/aceworks/ace/pkg/store"
)

// TestTransition: the one writer of a run's step and status moves what the graph has, refuses what it has not
// (a finished run moving, a status at a step it does not belong to), and records each move as one event.
func TestTransition(t *testing.T) {
	cases := []struct {
		name         string
		step         Step
		status       store.Status
		to           Step
		set          store.Status
		want         Step
		wantStatus   store.Status
		refused      bool
		event, moved bool
	}{
		{name: "step only", step: StepMonitor, status: store.StatusActive, to: StepFinalize, want: StepFinalize, wantStatus: store.StatusActive, moved: true},
		{name: "no move", step: StepMonitor, status: store.StatusActive, to: StepMonitor, want: StepMonitor, wantStatus: store.StatusActive},
		{name: "to a human", step: StepMonitor, status: store.StatusActive, to: StepWaitingInput, set: store.StatusWaitingInput, want: StepWaitingInput, wantStatus: store.StatusWaitingInput, moved: true},
		{name: "pause in place", step: StepMonitor, status: store.StatusActive, to: StepMonitor, set: store.StatusPausedLimit, want: StepMonitor, wantStatus: store.StatusPausedLimit, moved: true},
		{name: "leaving a wait is active again", step: StepWaitingInput, status: store.StatusWaitingInput, to: StepCancelled, want: StepCancelled, wantStatus: store.StatusActive, moved: true},
		{name: "leaving a pause is active again", step: StepMonitor, status: store.StatusPausedLimit, to: StepFollowPR, want: StepFollowPR, wantStatus: store.StatusActive, moved: true},
		{name: "done", step: StepReport, status: store.StatusActive, to: StepDone, set: store.StatusDone, want: StepDone, wantStatus: store.StatusDone, moved: true},
		{name: "closed while following", step: StepFollowPR, status: store.StatusActive, to: StepFollowPR, set: store.StatusClosed, want: StepFollowPR, wantStatus: store.StatusClosed, moved: true},
		{name: "a finished run never moves", step: StepDone, status: store.StatusDone, to: StepMonitor, refused: true},
		{name: "nor changes its end", step: StepFailed, status: store.StatusFailed, to: StepFailed, set: store.StatusActive, refused: true},
		{name: "waiting belongs at waiting_input", step: StepMonitor, status: store.StatusActive, to: StepMonitor, set: store.StatusWaitingInput, refused: true},
		{name: "a pause belongs at monitor", step: StepFinalize, status: store.StatusActive, to: StepFinalize, set: store.StatusPausedLimit, refused: true},
		{name: "done belongs at done", step: StepReport, status: store.StatusActive, to: StepReport, set: store.StatusDone, refused: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &store.Run{ID: 1, Step: string(c.step), Status: c.status}
			ev, err := transition(r, c.to, c.set)
			if c.refused {
				if err == nil {
					t.Fatalf("moved %s/%s to %s/%s; want refused", c.step, c.status, c.to, c.set)
				}
				if Step(r.Step) != c.step || r.Status != c.status {
					t.Fatalf("a refused move changed the run to %s/%s", r.Step, r.Status)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if Step(r.Step) != c.want || r.Status != c.wantStatus {
				t.Fatalf("run at %s/%s, want %s/%s", r.Step, r.Status, c.want, c.wantStatus)
			}
			if (ev != nil) != c.moved {
				t.Fatalf("event %+v, want one: %v", ev, c.moved)
			}
			if ev != nil && (ev.Kind != "transition" || ev.Step != r.Step) {
				t.Fatalf("event %+v", ev)
			}
		})
	}
}
