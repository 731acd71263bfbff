package github

import (
	"context"
	"strings"
	"testing"

	"github.com/aceworks/ace/internal/fakegithub"
	"github.com/aceworks/ace/pkg/tracker"
)

func openPR(t *testing.T, c *Client) int {
	t.Helper()
	pr, err := c.CreatePR(context.Background(), repo, tracker.NewPR{Title: "Add greeting", Body: "Closes #1", Head: "ace/1-x", Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	return pr.Number
}

func TestPRStateReadsFailuresReviewsAndComments(t *testing.T) {
	t.Parallel()
	gh, c, _ := setup(t)
	ctx := context.Background()
	issue := gh.AddIssue(repo, fakegithub.IssueOptions{Title: "x", Author: "alice"})
	n := openPR(t, c)
	sha := gh.HeadSHA(repo, n)
	log := strings.Repeat("noise line\n", 5000) + "--- FAIL: TestGreeting (0.00s)\n    greeting_test.go:12: got \"hi\", want \"hello\"\n"
	gh.AddCheckRun(repo, fakegithub.CheckRun{HeadSHA: sha, Name: "lint", Conclusion: "success"})
	gh.AddCheckRun(repo, fakegithub.CheckRun{HeadSHA: sha, Name: "test", Conclusion: "failure", Title: "1 test failed",
		Summary: "TestGreeting failed", Text: "see log", Log: log,
		Annotations: []fakegithub.Annotation{{Path: "greeting_test.go", StartLine: 12, Message: "got hi"}}})
	gh.AddCheckRun(repo, fakegithub.CheckRun{HeadSHA: "0000000000000000000000000000000000000000", Name: "old", Conclusion: "failure"})
	gh.AddCheckRun(repo, fakegithub.CheckRun{HeadSHA: sha, Name: "slow", Status: "in_progress"})
	gh.AddStatus(repo, sha, "ci/legacy", "pending", "queued")
	gh.AddStatus(repo, sha, "ci/legacy", "error", "the runner crashed")
	gh.AddReview(repo, n, "bob", "CHANGES_REQUESTED", "Please say hello", fakegithub.LineComment{Path: "GREETING.md", Line: 1,
		Body: "Say hello, not hi", DiffHunk: "@@ -0,0 +1 @@\n+hi"})
	gh.AddComment(repo, n, "alice", "/ace also add a test")
	_ = issue

	st, err := c.PRState(ctx, repo, n)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != "open" || st.Merged || st.HeadSHA != sha || st.HeadRef != "ace/1-x" || st.Conflicting() || !st.Pending {
		t.Fatalf("state %+v", st)
	}
	if len(st.FailedChecks) != 1 {
		t.Fatalf("failed checks %+v, want only test", st.FailedChecks)
	}
	fc := st.FailedChecks[0]
	if fc.Name != "test" || fc.Title != "1 test failed" || fc.Summary != "TestGreeting failed" || fc.Text != "see log" {
		t.Errorf("check %+v", fc)
	}
	if len(fc.Annotations) != 1 || fc.Annotations[0].Path != "greeting_test.go" || fc.Annotations[0].StartLine != 12 {
		t.Errorf("annotations %+v", fc.Annotations)
	}
	if len(fc.LogTail) > 16<<10 || !strings.HasSuffix(fc.LogTail, "want \"hello\"\n") || !strings.HasPrefix(fc.LogTail, "noise line\n") {
		t.Errorf("log tail: %d bytes, starts %q", len(fc.LogTail), fc.LogTail[:min(20, len(fc.LogTail))])
	}
	if len(st.FailedStatuses) != 1 || st.FailedStatuses[0].Context != "ci/legacy" || st.FailedStatuses[0].State != "error" {
		t.Errorf("statuses %+v (the newest status of a context counts)", st.FailedStatuses)
	}
	if len(st.Reviews) != 1 || st.Reviews[0].State != "CHANGES_REQUESTED" || st.Reviews[0].Author != "bob" {
		t.Errorf("reviews %+v", st.Reviews)
	}
	rc := st.ReviewComments
	if len(rc) != 1 || rc[0].Path != "GREETING.md" || rc[0].Line != 1 || !strings.Contains(rc[0].DiffHunk, "+hi") ||
		rc[0].ReviewID != st.Reviews[0].ID || rc[0].Author != "bob" || rc[0].ID == 0 || rc[0].CreatedAt.IsZero() {
		t.Errorf("review comments %+v", rc)
	}
	if len(st.Comments) != 1 || st.Comments[0].Body != "/ace also add a test" {
		t.Errorf("comments %+v", st.Comments)
	}

	// Unchanged: only 304s, and the failed check's annotations and log are not read again.
	total1, full1, nm1 := gh.Counts()
	if _, err := c.PRState(ctx, repo, n); err != nil {
		t.Fatal(err)
	}
	total2, full2, nm2 := gh.Counts()
	if full2 != full1 || total2-total1 != 6 || nm2-nm1 != 6 {
		t.Fatalf("unchanged PR cost %d requests, %d full, %d 304s; want 6, 0, 6", total2-total1, full2-full1, nm2-nm1)
	}
}

func TestPRStateFollowsPushesMergeAndConflicts(t *testing.T) {
	t.Parallel()
	gh, c, _ := setup(t)
	ctx := context.Background()
	n := openPR(t, c)
	gh.SetHeadSHA(repo, n, "1111111111111111111111111111111111111111")
	no := false
	gh.SetMergeable(repo, n, &no, "dirty")
	st, err := c.PRState(ctx, repo, n)
	if err != nil {
		t.Fatal(err)
	}
	if st.HeadSHA != "1111111111111111111111111111111111111111" || !st.Conflicting() {
		t.Fatalf("state %+v", st)
	}
	gh.MergePR(repo, n)
	st, err = c.PRState(ctx, repo, n)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Merged || st.State != "closed" {
		t.Fatalf("after merge %+v", st)
	}
}
