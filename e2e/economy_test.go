package e2e_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/aceworks/ace/internal/fakegithub"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// idleWorld has 10 repositories × 50 labelled issues that are all finished: a poll pass has nothing to do.
func idleWorld(t *testing.T) *world {
	w := newWorld(t, workScript, nil)
	w.gh.Unlabel(testRepo, testIssue, "ace", "alice")
	var repos []string
	for r := 0; r < 10; r++ {
		name := fmt.Sprintf("acme/idle%d", r)
		w.gh.AddRepo(name, fakegithub.RepoOptions{})
		for i := 0; i < 50; i++ {
			w.gh.AddIssue(name, fakegithub.IssueOptions{Title: "done already", Author: "alice", Labels: []string{"ace", "ace:done"}})
		}
		repos = append(repos, name)
	}
	w.cfg.GitHub.Repos = repos
	return w
}

// TestIdlePollCostsOnly304s: after the first pass, an idle pass gets nothing but 304s from GitHub.
func TestIdlePollCostsOnly304s(t *testing.T) {
	t.Parallel()
	w := idleWorld(t)
	for pass := 1; pass <= 3; pass++ {
		_, full0, nm0 := w.gh.Counts()
		var rep workflow.PollReport
		err := w.svc.Queue.DispatchRepos(t.Context(), w.cfg.GitHub.Repos, 4, &rep)
		if err != nil || len(rep.Errors) > 0 || rep.Started != 0 {
			t.Fatalf("pass %d: %+v %v", pass, rep, err)
		}
		_, full, nm := w.gh.Counts()
		t.Logf("pass %d: %d full responses, %d 304s", pass, full-full0, nm-nm0)
		if pass > 1 && (full != full0 || nm-nm0 != 10) {
			t.Fatalf("pass %d: %d full responses and %d 304s, want 0 and 10", pass, full-full0, nm-nm0)
		}
	}
}

// TestIdlePollThroughProcesses: the same economy when every pass is a new `ace poll --once` process, as from cron.
func TestIdlePollThroughProcesses(t *testing.T) {
	t.Parallel()
	w := idleWorld(t)
	for pass := 1; pass <= 3; pass++ {
		_, full0, nm0 := w.gh.Counts()
		if out, err := w.aceCmd("poll", "--once").CombinedOutput(); err != nil {
			t.Fatalf("ace poll --once: %v\n%s", err, out)
		}
		_, full, nm := w.gh.Counts()
		t.Logf("ace poll --once #%d: %d full responses, %d 304s", pass, full-full0, nm-nm0)
		if pass > 1 && full != full0 {
			t.Fatalf("pass %d: %d full responses, want 0 (all 304)", pass, full-full0)
		}
	}
}

// TestPollSurvivesGitHubFaults: a burst of 502s and a secondary rate limit during a pass; the pass ends cleanly,
// the next completes the work, nothing is claimed twice and no label is left wrong.
func TestPollSurvivesGitHubFaults(t *testing.T) {
	t.Parallel()
	w := newWorld(t, workScript, nil)
	second := w.gh.AddIssue(testRepo, fakegithub.IssueOptions{Title: "second", Author: "alice"})
	w.gh.Label(testRepo, second, "ace", "alice")
	faults := []fakegithub.Fault{{Status: 403, Header: map[string]string{"Retry-After": "1"}, Body: `{"message":"You have exceeded a secondary rate limit"}`}}
	for i := 0; i < 8; i++ {
		faults = append(faults, fakegithub.Fault{Status: 502, Body: `{"message":"Bad Gateway"}`})
	}
	w.gh.Inject(faults...)
	w.poll()
	w.pollUntil("both issues are done", func() bool {
		runs, _ := w.svc.Store.ListRuns(t.Context(), store.Filter{Statuses: []store.Status{store.StatusDone}})
		return len(runs) == 2
	})
	runs, _ := w.svc.Store.ListRuns(t.Context(), store.Filter{})
	if len(runs) != 2 {
		t.Fatalf("%d runs for 2 issues", len(runs))
	}
	for _, n := range []int{testIssue, second} {
		labels := w.gh.Issue(testRepo, n).Labels
		if !slices.Contains(labels, "ace:done") || slices.Contains(labels, "ace:running") || slices.Contains(labels, "ace:failed") {
			t.Errorf("issue %d labels %v", n, labels)
		}
	}
	if got := len(w.gh.PRs(testRepo)); got != 2 {
		t.Fatalf("%d pull requests, want 2", got)
	}
}
