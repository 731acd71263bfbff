package e2e_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/fakegithub"
	"github.com/aceworks/ace/internal/testkit"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

func (w *world) poll() workflow.PollReport {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var rep workflow.PollReport
	if err := w.svc.Queue.DispatchRepos(ctx, []string{testRepo}, w.cfg.Poll.MaxConcurrent, &rep); err != nil {
		w.t.Fatal(err)
	}
	for _, e := range rep.Errors {
		w.t.Logf("poll error: %v", e)
	}
	return rep
}

func (w *world) latest(issue int) *store.Run {
	w.t.Helper()
	r, err := w.svc.Store.LatestRun(context.Background(), testRepo, issue)
	if err != nil {
		w.t.Fatal(err)
	}
	return r
}

// pollUntil makes dispatch passes (the job queue works the runs meanwhile) until cond holds.
func (w *world) pollUntil(what string, cond func() bool) {
	w.t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			w.t.Fatalf("timed out polling until %s", what)
		}
		w.poll()
		time.Sleep(100 * time.Millisecond)
	}
}

func TestPollLifecycle(t *testing.T) {
	t.Parallel()
	script := "question Formal or casual?\n" + workScript
	w := newWorld(t, script, nil)

	// An issue labelled by someone without write permission gets one explanation, no run.
	w.gh.SetPermission(testRepo, "reader", "read")
	untrusted := w.gh.AddIssue(testRepo, fakegithub.IssueOptions{Title: "drive-by", Author: "reader"})
	w.gh.Label(testRepo, untrusted, "ace", "reader")

	rep := w.poll()
	if rep.Started != 1 || rep.Untrusted != 1 {
		t.Fatalf("first pass %+v, want 1 started and 1 untrusted", rep)
	}
	w.poll()
	explained := 0
	for _, c := range w.gh.Comments(testRepo, untrusted) {
		if strings.Contains(c.Body, "will not start") {
			explained++
		}
	}
	if explained != 1 {
		t.Fatalf("%d explanations on the untrusted issue, want exactly 1", explained)
	}
	if _, err := w.svc.Store.LatestRun(context.Background(), testRepo, untrusted); err == nil {
		t.Fatal("a run was started for an untrusted labeler")
	}

	// The trusted issue: started to prompt delivery, then the agent asks.
	testkit.WaitFor(w.t, "the run claims the issue", 30*time.Second, func() bool { return slices.Contains(w.labels(), "ace:running") })
	w.pollUntil("the question is relayed to the issue", func() bool { return w.latest(testIssue).Status == store.StatusWaitingInput })
	if !slices.Contains(w.labels(), "ace:needs-input") {
		t.Fatalf("labels %v lack ace:needs-input", w.labels())
	}
	w.gh.AddComment(testRepo, testIssue, "alice", "Casual.")
	w.pollUntil("the run finishes", func() bool { return w.latest(testIssue).Status == store.StatusDone })
	if p := w.prompts(); len(p) < 2 || p[1] != "Casual." {
		t.Fatalf("prompts %q", p)
	}
	first := w.latest(testIssue)

	// Retry by relabel: removing ace:done (keeping ace) starts attempt 2 on the same branch.
	w.gh.Unlabel(testRepo, testIssue, "ace:done", "alice")
	w.pollUntil("attempt 2 starts", func() bool { return w.latest(testIssue).Attempt == 2 })
	testkit.WaitFor(w.t, "attempt 2 reports on the status comment", 30*time.Second, func() bool {
		s := w.statusComments()
		return len(s) == 1 && strings.Contains(s[0], "| attempt | 2 |")
	})
	second := w.latest(testIssue)
	if second.Branch != first.Branch || second.StatusCommentID != first.StatusCommentID {
		t.Fatalf("attempt 2 on %s (comment %d), want %s (comment %d)", second.Branch, second.StatusCommentID, first.Branch, first.StatusCommentID)
	}
	if s := w.statusComments(); len(s) != 1 || !strings.Contains(s[0], "| attempt | 2 |") {
		t.Fatalf("status comments %q", s)
	}

	// Closing the issue stops the agent and cancels the run.
	w.gh.Close(testRepo, testIssue)
	w.pollUntil("the run is cancelled", func() bool { return w.latest(testIssue).Status == store.StatusCancelled })
	if w.sessionAlive() {
		t.Fatal("the session of a closed issue is still alive")
	}
	if s := w.statusComments(); !strings.Contains(s[0], "cancelled") {
		t.Fatalf("status comment %q", s[0])
	}
}

func TestPollRespectsMaxConcurrentAndAgentLabels(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "hang\n", nil)
	w.cfg.Poll.MaxConcurrent = 2
	for i := 0; i < 4; i++ {
		n := w.gh.AddIssue(testRepo, fakegithub.IssueOptions{Title: "more", Author: "alice", Created: time.Now().Add(time.Duration(i) * time.Minute)})
		w.gh.Label(testRepo, n, "ace", "alice")
	}
	rep := w.poll()
	if rep.Started != 2 {
		t.Fatalf("started %d, want max_concurrent = 2", rep.Started)
	}
	runs, _ := w.svc.Store.ListRuns(context.Background(), store.Filter{})
	if len(runs) != 2 || runs[0].Issue != testIssue {
		t.Fatalf("runs %d (first %d), want the 2 oldest issues", len(runs), runs[0].Issue)
	}
	testkit.WaitFor(w.t, "both agents run", 30*time.Second, func() bool {
		sessions, _ := w.svc.Tmux.Sessions(context.Background(), "ace-")
		return len(sessions) == 2
	})
	if rep := w.poll(); rep.Started != 0 {
		t.Fatalf("a second pass started %d more, want none beyond max_concurrent", rep.Started)
	}
}
