package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/fakegithub"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// limitScript has the agent of issue 193 hit its account's usage limit (resetting at reset) on the task prompt;
// the agents of other issues just end that turn. The next prompt (the continue at the reset) does the work.
func limitScript(reset time.Time) string {
	return fmt.Sprintf("sh case \"$PWD\" in *193*) echo 'Usage limit reached · resets at %s';; esac\nidle\n",
		reset.UTC().Format(time.RFC3339)) + workScript
}

func limitTune(c *config.Config) {
	c.Limits.ResumeMargin = config.Duration{}
	// Without the pause the idle agent would be nudged at once — and, with no nudges to give, a human asked.
	c.Monitor.IdleAfter = config.Duration{Duration: time.Second}
	c.Monitor.MaxNudges = 0
}

func untilPaused(r *store.Run) bool {
	return r.Status == store.StatusPausedLimit || workflow.UntilSettled(r)
}

func TestUsageLimitPausesAndResumesAtReset(t *testing.T) {
	t.Parallel()
	reset := time.Now().Add(20 * time.Second).Truncate(time.Second) // after start-up even on a loaded machine
	w := newWorld(t, limitScript(reset), limitTune)
	r := w.run(untilPaused)
	if r.Status != store.StatusPausedLimit {
		t.Fatalf("run %s at %s (%s), want paused_limit", r.Status, r.Step, r.Error)
	}
	if !r.State.ResumeAt.Equal(reset) || r.State.ResumeAt.Location() != time.UTC {
		t.Errorf("resume_at %v, want %v in UTC", r.State.ResumeAt, reset.UTC())
	}
	if r.Nudges != 0 {
		t.Errorf("nudges %d while paused, want 0", r.Nudges)
	}
	if s := w.statusComments(); len(s) != 1 || !strings.Contains(s[0], "paused") || !strings.Contains(s[0], reset.UTC().Format(time.RFC3339)) {
		t.Errorf("status comments %q, want one saying paused until %s", s, reset.UTC().Format(time.RFC3339))
	}
	if ls := lsJSON(t, w); !strings.Contains(ls, `"status": "paused_limit"`) || !strings.Contains(ls, `"resume_at": "`+reset.UTC().Format(time.RFC3339)+`"`) {
		t.Errorf("ace ls --json does not show the pause:\n%s", ls)
	}

	follow(t, w, r, workflow.UntilSettled)
	if r.Status != store.StatusDone {
		t.Fatalf("run ended %s at %s: %s", r.Status, r.Step, r.Error)
	}
	if r.Nudges != 0 || r.State.Questions != 0 {
		t.Errorf("nudges %d, questions %d: a limit spends neither", r.Nudges, r.State.Questions)
	}
	if len(w.gh.PRs(testRepo)) != 1 {
		t.Errorf("%d pull requests, want 1", len(w.gh.PRs(testRepo)))
	}
	p := w.prompts()
	if len(p) != 2 || p[1] != w.cfg.Limits.Continue {
		t.Errorf("prompts %q, want the task, then %q", p, w.cfg.Limits.Continue)
	}
	if resumed := r.State.Limit; resumed == nil || resumed.ResumedAt.Before(reset) {
		t.Errorf("resumed %+v, want at or after %v", resumed, reset)
	}
	for _, ev := range w.progress() {
		if ev.Kind == workflow.EventQuestion || ev.Kind == workflow.EventNudge {
			t.Errorf("the limit cost a %s: %s", ev.Kind, ev.Message)
		}
	}
}

func TestUsageLimitPausesEveryRunOnTheAgent(t *testing.T) {
	t.Parallel()
	reset := time.Now().Add(20 * time.Second).Truncate(time.Second)
	w := newWorld(t, limitScript(reset), func(c *config.Config) {
		limitTune(c)
		c.Monitor.IdleAfter = config.Duration{Duration: 30 * time.Second} // issue 194's agent idles until the pause reaches it
	})
	w.gh.AddIssue(testRepo, fakegithub.IssueOptions{Number: 194, Title: "Another", Body: "Add GREETING.md too.", Author: "alice"})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var runs []*store.Run
	for _, n := range []int{testIssue, 194} {
		r, err := w.svc.Engine.Open(ctx, workflow.Request{Repo: testRepo, Issue: n, NewAttempt: true})
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	for _, r := range runs {
		follow(t, w, r, untilPaused)
		if r.Status != store.StatusPausedLimit || !r.State.ResumeAt.Equal(reset) {
			t.Fatalf("%s#%d: %s resume_at %v, want paused_limit until %v", r.Repo, r.Issue, r.Status, r.State.ResumeAt, reset)
		}
	}
	if !runs[1].State.Limit.Shared || runs[0].State.Limit.Shared {
		t.Errorf("shared: %v, %v; want the second run paused by the first's limit", runs[0].State.Limit.Shared, runs[1].State.Limit.Shared)
	}
	for _, r := range runs {
		follow(t, w, r, workflow.UntilSettled)
		if r.Status != store.StatusDone || r.Nudges != 0 {
			t.Errorf("%s#%d ended %s with %d nudges (%s)", r.Repo, r.Issue, r.Status, r.Nudges, r.Error)
		}
		if r.State.Limit.ResumedAt.Before(reset) {
			t.Errorf("%s#%d resumed at %v, before the reset %v", r.Repo, r.Issue, r.State.Limit.ResumedAt, reset)
		}
	}
	if n := len(w.gh.PRs(testRepo)); n != 2 {
		t.Errorf("%d pull requests, want 2", n)
	}
	for _, n := range []int{testIssue, 194} {
		if slices.Contains(w.gh.Issue(testRepo, n).Labels, w.cfg.Labels.NeedsInput) {
			t.Errorf("#%d was labelled %s", n, w.cfg.Labels.NeedsInput)
		}
	}
}

func follow(t *testing.T, w *world, r *store.Run, until workflow.Until) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := w.svc.Engine.Follow(ctx, r, until); err != nil {
		t.Fatalf("follow %s#%d: %v (at %s, %s)", r.Repo, r.Issue, err, r.Step, r.Error)
	}
}

// lsJSON is what `ace ls --json` prints: the runs as the store holds them.
func lsJSON(t *testing.T, w *world) string {
	t.Helper()
	runs, err := w.svc.Store.ListRuns(context.Background(), store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(runs, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
