package e2e_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/realcli"
	"github.com/aceworks/ace/pkg/modelserver"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// realCLIsLiveWithdrawn: a live run relays the agent's permission request (claude, gemini) or question
// (codex's request_user_input) to the issue and waits; Ctrl-C in the run's pane interrupts the turn, and the
// agent withdraws the request (claude and codex themselves, gemini through ace's "cancelled" answer). The run
// stops waiting for a human: it goes back to monitoring, the needs-input label comes off, and a withdrawn event
// says why.
func realCLIsLiveWithdrawn(t *testing.T, cs *realcli.Cases) {
	cs.EachPinned(func(t *testing.T, c realcli.CLI) {
		what, asked := "permission request for", "permission"
		ask := modelserver.WriteFile("GREETING.md", greeting)
		if c.Name == "codex" {
			// Its workspace-write sandbox asks for no write: its question tool asks instead.
			what, asked, ask = "question", question, modelserver.Ask(question, "Formal", "Casual")
		}
		toml := testPrices + fmt.Sprintf("\n[agent]\ndefault = %q\n\n[agents.%s]\nrunner = \"live\"\n", c.Name, c.Name)
		w := newRealWorld(t, c, toml, strings.Join(realIssueBody, "\n"),
			[]modelserver.Turn{modelserver.ReadFile("ACE_TASK.md"), ask})

		r := w.drive(workflow.UntilSettled, 3*time.Minute)
		if r.Status != store.StatusWaitingInput || !strings.Contains(r.State.Question, asked) {
			t.Fatalf("run %s at %s waiting for %q, want a %s on the issue\n%s", r.Status, r.Step, r.State.Question, what, w.report(r))
		}
		if err := w.svc.Tmux.SendKeys(t.Context(), r.Session, "C-c"); err != nil {
			t.Fatal(err)
		}
		r = w.drive(func(r *store.Run) bool { return r.Status != store.StatusWaitingInput }, 2*time.Minute)
		ev := w.events(r)
		t.Logf("events:\n%s", ev)
		if r.Status != store.StatusActive || r.State.Question != "" {
			t.Fatalf("run %s at %s still asking %q, want active again\n%s", r.Status, r.Step, r.State.Question, w.report(r))
		}
		if !strings.Contains(ev, "withdrawn: the agent") || !strings.Contains(ev, what) {
			t.Errorf("no withdrawn event for the %s", what)
		}
		if slices.Contains(w.gh.Issue(testRepo, testIssue).Labels, "ace:needs-input") {
			t.Errorf("the issue keeps ace:needs-input: %v", w.gh.Issue(testRepo, testIssue).Labels)
		}
		if status := statusComment(w); !strings.Contains(status, "needs no answer any more") {
			t.Errorf("the status comment does not say the question needs no answer:\n%s", status)
		}
	})
}
