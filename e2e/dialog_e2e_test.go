package e2e_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// TestDialogShownAgainMidTurnIsAnsweredAgain: a dialog the agent shows again and again in one run (claude
// 2.1.332's "Auto mode can't check actions" comes back in a later turn) is a new dialog each time, answered once
// each, after it settled — not a retry of the first that goes to a human on the third showing.
func TestDialogShownAgainMidTurnIsAnsweredAgain(t *testing.T) {
	t.Parallel()
	script := "say working on it\nbusy 1s\n"
	for _, n := range []string{"one", "two", "three", "four"} {
		script += "notice Notice: check " + n + "\nbusy 300ms\n"
	}
	w := newWorld(t, script+workScript, nil)
	r := w.run(workflow.UntilSettled)
	if r.Status != store.StatusDone {
		t.Fatalf("run %s at %s (%s), want done", r.Status, r.Step, r.Error)
	}
	for _, c := range w.gh.Comments(testRepo, testIssue) {
		if strings.Contains(c.Body, "needs input") {
			t.Errorf("a human was asked:\n%s", c.Body)
		}
	}
	evs, err := w.svc.Store.Events(context.Background(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	var answered []string
	for _, e := range evs {
		if e.Kind == "dialog" {
			answered = append(answered, e.Message)
		}
	}
	if len(answered) != 4 {
		t.Errorf("the notice answered %d times, want once for each of its 4 showings: %q", len(answered), answered)
	}
	for _, m := range answered {
		if strings.Contains(m, "again") {
			t.Errorf("a new showing taken for a retry: %q", m)
		}
	}
}
