package e2e_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/realcli"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/modelserver"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// limitWindow is how long the model server answers every request with the provider's usage-limit error, from
// the first request the CLI makes: the reset the error announces is the window's end.
const limitWindow = 20 * time.Second

// limitBackoff is ace's wait where a CLI gives no reset time (gemini's daily quota): past the window.
const limitBackoff = 25 * time.Second

// realCLILimits walks issue 19's usage limit with each real CLI on both runners: the model server answers
// the provider's real usage-limit error (claude: the subscriber's unified "rejected" 429; codex:
// usage_limit_reached; gemini: the per-day RESOURCE_EXHAUSTED) from the first request until the reset, the run
// pauses at paused_limit with the resume_at the CLI's words allow, spends no nudge, asks no human, and after
// the reset resumes the same conversation with limits.continue and opens its PR.
func realCLILimits(t *testing.T, cs *realcli.Cases) {
	for _, c := range realcli.PinnedAll(t) {
		for _, runner := range []string{"tmux", "exec"} {
			cs.Run(c.Label()+"/"+runner, c, func(t *testing.T) {
				runLimitCase(t, c, runner)
			})
		}
	}
}

func runLimitCase(t *testing.T, c realcli.CLI, runner string) {
	start := time.Now()
	cli := c.Name
	toml := fmt.Sprintf("[agent]\ndefault = %q\n\n[agents.%s]\n", cli, cli)
	if runner == "exec" {
		toml += "runner = \"exec\"\n"
	} else {
		toml += "auto_approve = true\n"
	}
	turns := []modelserver.Turn{modelserver.ReadFile("ACE_TASK.md")}
	turns = append(turns, commitTurns()...)
	const margin = 2 * time.Second
	w := newRealWorld(t, c, toml, "Please add GREETING.md.", turns, func(c *config.Config) {
		c.Limits.ResumeMargin = config.Duration{Duration: margin}
		c.Limits.Backoff = config.Duration{Duration: limitBackoff}
	})
	if cli == "claude" {
		// The unified usage limit is a subscriber's: claude signs in with an OAuth token, no API key.
		if err := os.Unsetenv("ANTHROPIC_API_KEY"); err != nil {
			t.Fatal(err)
		}
		if err := os.Setenv("CLAUDE_CODE_OAUTH_TOKEN", "sk-ant-oat01-modelserver-test"); err != nil {
			t.Fatal(err)
		}
	}
	started := w.srv.FailFor(limitWindow, modelserver.Failure{Kind: modelserver.UsageLimit})

	r := w.drive(func(r *store.Run) bool { return r.Status == store.StatusPausedLimit || workflow.UntilSettled(r) }, 90*time.Second)
	paused := time.Now()
	if r.Status != store.StatusPausedLimit {
		t.Fatalf("run %s at %s (%s), want paused_limit\n%s", r.Status, r.Step, r.Error, w.report(r))
	}
	<-started
	end := w.srv.Window()
	t.Logf("%s %s: paused after %s, resume_at %s, window ended %s (%q)", cli, runner, paused.Sub(start).Round(time.Millisecond),
		r.State.ResumeAt.Format(time.RFC3339), end.UTC().Format(time.RFC3339Nano), r.State.Limit.Message)
	checkResumeAt(t, w, r, cli, runner, end, margin)
	resumeAt := r.State.ResumeAt
	if r.Nudges != 0 || r.State.Questions != 0 {
		t.Errorf("nudges %d, questions %d while paused: a limit spends neither", r.Nudges, r.State.Questions)
	}

	r = w.drive(untilEnded, 2*time.Minute)
	if r.Status != store.StatusDone {
		t.Fatalf("run %s at %s: %s\n%s", r.Status, r.Step, r.Error, w.report(r))
	}
	t.Logf("%s %s: PR after %s", cli, runner, time.Since(start).Round(time.Millisecond))
	ev := w.events(r)
	t.Logf("events:\n%s", ev)
	// Not before the reset the CLI announced. A reset shown to the minute may come before the server's real
	// one: a continue refused then pauses again (its resume is then later still), and the PR proves a resume
	// that went through.
	if r.State.Limit == nil || r.State.Limit.ResumedAt.Before(resumeAt) {
		t.Errorf("limit state %+v, want resumed at or after resume_at %v (the window ended %v)", r.State.Limit, resumeAt, end)
	}
	if !strings.Contains(ev, "resumed after the usage limit") {
		t.Errorf("the run did not resume after the limit:\n%s", ev)
	}
	if strings.Contains(ev, "nudge") || strings.Contains(ev, "restart") || strings.Contains(ev, " question") {
		t.Errorf("the limit cost a nudge, a restart or a question:\n%s", ev)
	}
	if r.Nudges != 0 || r.State.Questions != 0 {
		t.Errorf("nudges %d, questions %d: a limit spends neither", r.Nudges, r.State.Questions)
	}
	if slices.Contains(w.gh.Issue(testRepo, testIssue).Labels, "ace:needs-input") {
		t.Errorf("labels %v: a limit asks no human", w.gh.Issue(testRepo, testIssue).Labels)
	}
	for _, c := range w.gh.Comments(testRepo, testIssue) {
		if !strings.Contains(c.Body, workflow.StatusMarker) {
			t.Errorf("a comment besides the status comment: %q", c.Body)
		}
	}
	// The same conversation: the continue reached the model with the task's prompt still in its history. Not for
	// headless gemini: it saves no conversation whose first request was refused, so the task's prompt starts a
	// new one (limits.go).
	// Interactive gemini drops a refused prompt from its history: the continue says where the task is.
	cont, task := w.cfg.Limits.Continue, "Read ACE_TASK.md"
	switch {
	case cli == "gemini" && runner == "exec":
		cont = task
	case cli == "gemini":
		task = "Resume the task in ACE_TASK.md"
	}
	same := false
	for _, q := range w.srv.Requests() {
		if q.Status == 200 && slices.ContainsFunc(q.UserTexts, func(s string) bool { return strings.Contains(s, cont) }) &&
			slices.ContainsFunc(q.UserTexts, func(s string) bool { return strings.Contains(s, task) }) {
			same = true
		}
	}
	if !same {
		t.Errorf("no answered request carried %q with the task's prompt in one conversation\n%s", cont, w.report(r))
	}
	if prs := w.gh.PRs(testRepo); len(prs) != 1 || prs[0].Head != r.Branch {
		t.Fatalf("pull requests %+v, want one from %s", prs, r.Branch)
	}
}

// checkResumeAt asserts the pause's resume_at against what the CLI could know of the reset at end:
//   - exact epochs (claude's headless rate_limit_event.resetsAt): the reset's second plus the margin;
//   - a clock to the minute (claude's screen, codex): the minute shown plus the margin, or — that minute
//     having passed already — a backoff;
//   - none (gemini's daily quota): the backoff.
func checkResumeAt(t *testing.T, w *realWorld, r *store.Run, cli, runner string, end time.Time, margin time.Duration) {
	t.Helper()
	got := r.State.ResumeAt
	if got.Location() != time.UTC {
		t.Errorf("resume_at %v is not in UTC", got)
	}
	pausedAt := r.State.Limit.PausedAt
	backoff := pausedAt.Add(limitBackoff).Truncate(time.Second)
	if backoff.Before(pausedAt.Add(limitBackoff)) {
		backoff = backoff.Add(time.Second)
	}
	var want []time.Time
	switch {
	case cli == "claude" && runner == "exec":
		want = []time.Time{end.Truncate(time.Second).Add(margin)}
	case cli == "gemini":
		want = []time.Time{backoff}
	default:
		minute := end.Truncate(time.Minute).Add(margin)
		if minute.After(pausedAt) {
			want = append(want, minute)
		} else {
			want = append(want, backoff)
		}
		want = append(want, end.Truncate(time.Minute).Add(time.Minute+margin)) // a clock that rounds up
	}
	for i := range want {
		want[i] = want[i].UTC()
	}
	if !slices.ContainsFunc(want, got.Equal) {
		t.Errorf("resume_at %s, want one of %v\n%s", got.Format(time.RFC3339), want, w.report(r))
	}
}
