package e2e_test

import (
	"strings"
	"testing"

	"github.com/aceworks/ace/internal/fakegithub"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// TestRunBudgetStopsAtIdleAndAsks: a run past budget.run is not nudged at its idle moment: the issue is asked,
// and the human's answer lets it go on (one more budget), reaching the agent as its next turn.
func TestRunBudgetStopsAtIdleAndAsks(t *testing.T) {
	t.Parallel()
	w := newHeadlessWorld(t, "claude", "say Thinking.\nidle\n"+workScript, func(c *config.Config) {
		c.Budget.Run.MaxTokens = 10 // the task prompt alone is more
	})
	r := w.run(workflow.UntilSettled)
	if r.Status != store.StatusWaitingInput || r.Nudges != 0 || !r.State.BudgetAsked {
		t.Fatalf("run %s at %s, %d nudges, budget asked %v (%s); want waiting for a human, no nudge", r.Status, r.Step,
			r.Nudges, r.State.BudgetAsked, r.Error)
	}
	if r.State.Usage == nil || r.State.Usage.Tokens() < 10 {
		t.Fatalf("usage %+v: the run did not spend its budget", r.State.Usage)
	}
	asked := 0
	for _, c := range w.gh.Comments(testRepo, testIssue) {
		if strings.Contains(c.Body, "reached its budget") && strings.Contains(c.Body, "budget.run: 10 tokens") {
			asked++
		}
	}
	if asked != 1 {
		t.Fatalf("%d budget questions on the issue, want 1:\n%s", asked, w.eventLog(r))
	}
	w.gh.AddComment(testRepo, testIssue, "alice", "Go on.")
	r = w.run(untilEnded)
	if r.Status != store.StatusDone || r.Nudges != 0 || r.State.BudgetGrants != 1 {
		t.Fatalf("after the answer: %s (%s), %d nudges, %d grants; want done with one grant", r.Status, r.Error, r.Nudges, r.State.BudgetGrants)
	}
	turns := w.turns()
	if len(turns) != 2 || turns[1].Prompt != "Go on." {
		t.Fatalf("turns %+v, want the task, then the answer", turns)
	}
}

// TestDayBudgetStopsDispatch: once the runs created today spent budget.day, a labelled issue is not started.
func TestDayBudgetStopsDispatch(t *testing.T) {
	t.Parallel()
	w := newHeadlessWorld(t, "claude", workScript, func(c *config.Config) {
		c.Budget.Day.MaxTokens = 10
	})
	r := w.run(untilEnded)
	if r.Status != store.StatusDone || r.State.Usage == nil || r.State.Usage.Tokens() < 10 {
		t.Fatalf("first run %s (%s), usage %+v; want done, past the day's budget", r.Status, r.Error, r.State.Usage)
	}
	next := w.gh.AddIssue(testRepo, fakegithub.IssueOptions{Title: "Another", Body: "More.", Author: "alice"})
	w.gh.Label(testRepo, next, "ace", "alice")
	rep := w.poll()
	if rep.Started != 0 || !strings.Contains(rep.OverBudget, "budget.day") {
		t.Fatalf("dispatch %+v, want nothing started, over the day's budget", rep)
	}
	if runs, err := w.svc.Store.ListRuns(t.Context(), store.Filter{Repo: testRepo, Issue: next}); err != nil || len(runs) != 0 {
		t.Fatalf("runs of the new issue: %d (%v), want none", len(runs), err)
	}
}
