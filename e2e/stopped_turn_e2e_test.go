package e2e_test

import (
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// TestTurnStoppedByItsCLIIsContinuedAtOnce: a CLI that stops the agent's turn by itself and says a message goes
// on (claude 2.1.332 behind a gateway: "Did not run 1 call … Interrupted", then its notice that actions now ask)
// gets that message once its screen settled, not after idle_after: the run went on only after 3 minutes (and
// the check's gateway phase, 2 minutes long, failed in CI).
func TestTurnStoppedByItsCLIIsContinuedAtOnce(t *testing.T) {
	t.Parallel()
	script := "say working on it\nbusy 300ms\nsay Stopped by the CLI: a call it could not check did not run\n---\n"
	w := newWorld(t, script+workScript, func(c *config.Config) {
		c.Monitor.IdleAfter = config.D(time.Hour) // an idle nudge would come too late for the test to pass
		c.Monitor.Settle = config.D(500 * time.Millisecond)
	})
	r := w.run(workflow.UntilSettled)
	if r.Status != store.StatusDone {
		t.Fatalf("run %s at %s (%s), want done; its screen:\n%s", r.Status, r.Step, r.Error, r.State.LastScreen)
	}
	nudges := w.eventMessages(r, "nudge")
	if len(nudges) != 1 || !strings.Contains(nudges[0], "which its CLI had stopped") {
		t.Errorf("nudges %q, want the one continuing the stopped turn", nudges)
	}
}
