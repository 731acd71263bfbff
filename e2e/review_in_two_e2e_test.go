package e2e_test

import (
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/fakegithub"
	"github.com/aceworks/ace/internal/testkit"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// TestReviewReadInTwoIsOneRound: a review submitted between ace's two reads of a pull request (its reviews, then
// its review comments) shows its comments without itself. ace made them a round, and the review, seen at the next
// look, a second one — "changes requested, 0 review comment(s)" for changes already made (seen in CI, the live
// walk with codex). The comments now wait for their review: one round, with both.
func TestReviewReadInTwoIsOneRound(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	w := newWorld(t, followScript(out), func(c *config.Config) { c.PR.Follow = true })
	w.gh.SetGitDir(testRepo, w.remote)
	w.gh.SetPermission(testRepo, "carol", "write")
	r := w.run(workflow.UntilSettled)
	if r.Step != string(workflow.StepFollowPR) || r.PRNumber == 0 {
		t.Fatalf("after the PR opened the run is %s at %s (%s), want active at follow_pr", r.Status, r.Step, r.Error)
	}
	publish := w.gh.AddReviewInTwo(testRepo, r.PRNumber, "carol", "CHANGES_REQUESTED", "One nit.", fakegithub.LineComment{
		Path: "GREETING.md", Line: 1, Body: "Capitalize it", DiffHunk: "@@ -0,0 +1 @@\n+hi"})
	// ace looks at the pull request again (its comments, the review not there yet) before the review shows.
	looked := w.gh.PathCount("/comments")
	testkit.WaitFor(t, "ace looks at the review comments again", 30*time.Second, func() bool { return w.gh.PathCount("/comments") > looked+1 })
	publish()
	r = w.waitRun(r, "round 1 pushed", func(r *store.Run) bool { return roundDone(r, 1) })
	w.gh.MergePR(testRepo, r.PRNumber)
	if r = w.waitRun(r, "the run ended", func(r *store.Run) bool { return r.Status.Terminal() }); r.Status != store.StatusDone {
		t.Errorf("after the merge the run is %s at %s: %s", r.Status, r.Step, r.Error)
	}
	p := w.prompts()
	if len(p) != 2 {
		t.Fatalf("prompts %q, want the task and one review round", p)
	}
	for _, want := range []string{"carol requested changes", "Capitalize it", "GREETING.md:1"} {
		if !strings.Contains(p[1], want) {
			t.Errorf("the review round's prompt lacks %q:\n%s", want, p[1])
		}
	}
}
