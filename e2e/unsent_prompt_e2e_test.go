package e2e_test

import (
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// TestPromptLeftUnsentIsSubmitted: an agent that takes the prompt's Enter only to look at — its composer clears
// for a moment, then the text comes back, unsent (gemini 0.61 in CI, its prompt in the composer for two minutes
// and then "stuck" sent to a human) — gets Enter again once its screen settled, and the run goes on to a pull
// request.
func TestPromptLeftUnsentIsSubmitted(t *testing.T) {
	t.Parallel()
	w := newWorld(t, workScript, func(c *config.Config) {
		a := c.Agents["fake"]
		// Its ready marker is the composer's placeholder, as gemini's is: text in the composer hides it.
		// An Enter within 5 s of the paste is lost: ace's first Enters are, even on a loaded machine where the
		// paste takes seconds to show (with 2 s, one came after and the prompt went in at once).
		a.Command += " --lost-enters 5s --status-line ''"
		a.Markers.Ready = `Ask fake-agent anything`
		c.Agents["fake"] = a
		c.Monitor.Settle = config.D(6 * time.Second) // Enter again only past the lost Enters' 5 s
	})
	r := w.run(workflow.UntilSettled)
	if r.Status != store.StatusDone {
		t.Fatalf("run %s at %s (%s), want done; its screen:\n%s", r.Status, r.Step, r.Error, r.State.LastScreen)
	}
	p := w.prompts()
	if len(p) != 1 || !strings.HasPrefix(p[0], "Read ACE_TASK.md") {
		t.Errorf("prompts %q, want the task once", p)
	}
	resent := 0
	for _, m := range w.eventMessages(r, "prompt") {
		if strings.Contains(m, "unsent") {
			resent++
		}
	}
	if resent != 1 || r.Nudges != 0 {
		t.Errorf("%d Enters again, %d nudges; want one Enter again, no nudge", resent, r.Nudges)
	}
}
