package e2e_test

import (
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// TestKeysGoToTheScreenAsItIsNow: an agent slow to redraw after a dialog's answer (claude 2.1.332 under load) and
// then asking a permission with "No" preselected is answered on what it shows now. ace's monitor kept the
// dialog's screen from before the redraw (its cache is refreshed once output settles), took the dialog for
// still there, answered it again with Enter — which said No to the permission and ended the agent's turn
// ("Interrupted · What should Claude do instead?", the check's gateway phase red in CI).
func TestKeysGoToTheScreenAsItIsNow(t *testing.T) {
	t.Parallel()
	script := "say working on it\nbusy 300ms\nslow 1500ms\nnotice Notice: the check is not getting through\n" +
		"choose This action needs your approval\n"
	w := newWorld(t, script+workScript, func(c *config.Config) {
		fake := c.Agents["fake"]
		fake.AutoApprove = true
		c.Agents["fake"] = fake
		c.Monitor.Settle = config.D(10 * time.Second) // the cache outlives the redraw, as under load
	})
	r := w.run(workflow.UntilSettled)
	if r.Status != store.StatusDone {
		t.Fatalf("run %s at %s (%s), want done; its screen:\n%s", r.Status, r.Step, r.Error, r.State.LastScreen)
	}
	dialogs, approved := w.eventMessages(r, "dialog"), w.eventMessages(r, "approved")
	if nudges := w.eventMessages(r, "nudge"); len(nudges) > 0 {
		t.Errorf("the agent was nudged (%q): its turn had ended", nudges)
	}
	if len(dialogs) != 1 || len(approved) != 1 {
		t.Errorf("dialog answers %q and approvals %q, want one of each", dialogs, approved)
	}
}
