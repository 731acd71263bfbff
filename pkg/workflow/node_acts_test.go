package workflow

import (
	"context"
	"testing"

	"github.com/aceworks/ace/pkg/store"
)

// TestActsWithNothingLeftGoBackToTheLook: a run found at ask_human or tell_agent with nothing left to do there (its
// act done and the save that moved it on lost, say) goes back to the look — the task's delivery when the agent has
// not had it — instead of failing or acting twice.
func TestActsWithNothingLeftGoBackToTheLook(t *testing.T) {
	t.Parallel()
	e := withParts(&Engine{})
	for _, tc := range []struct {
		name      string
		node      Node
		delivered bool
		want      Step
	}{
		{"ask_human", e.ask, true, StepMonitor},
		{"ask_human before the task", e.ask, false, StepDeliver},
		{"tell_agent", e.tell, true, StepMonitor},
	} {
		r := &store.Run{ID: 1, Runner: store.RunnerTmux, Status: store.StatusActive}
		r.State.PromptDelivered = tc.delivered
		res, err := tc.node(context.Background(), r)
		if err != nil || res.Next != tc.want {
			t.Errorf("%s with nothing to do: %+v, %v; want %s", tc.name, res, err, tc.want)
		}
	}
}
