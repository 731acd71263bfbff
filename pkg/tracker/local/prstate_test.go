package local

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/gittest"
	"github.com/aceworks/ace/pkg/tracker"
)

// TestPRStateFollowsTheRemoteAndItsChecks: the head commit comes from the remote, the checks recorded on it
// decide what failed, and a merge closes the pull request and the issue it closes.
func TestPRStateFollowsTheRemoteAndItsChecks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := folder(t)
	remote := gittest.BareRepo(t, dir, "remote", nil)
	tr, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	var _ tracker.PRReader = tr
	main := gittest.Run(t, dir, "--git-dir", remote, "rev-parse", "main")
	gittest.Run(t, dir, "--git-dir", remote, "branch", "ace/1-x", "main")
	pr, err := tr.CreatePR(ctx, "demo/hello", tracker.NewPR{Title: "t", Body: "Closes #1", Head: "ace/1-x", Base: "main"})
	if err != nil {
		t.Fatal(err)
	}

	st, err := tr.PRState(ctx, "demo/hello", pr.Number)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != "open" || st.Merged || st.HeadSHA != main || st.HeadRef != "ace/1-x" || st.Base != "main" ||
		st.Pending || len(st.FailedChecks) != 0 || st.Conflicting() {
		t.Fatalf("fresh pull request: %+v", st)
	}

	fail := Check{Name: "ci", Conclusion: "failure", Title: "ci.sh exited 1", Summary: "README.md does not list hello.txt",
		Log: "$ sh ci.sh\nREADME.md does not list hello.txt\n"}
	fail.Annotations = []Annotation{{Path: "README.md", StartLine: 3, Level: "failure", Message: "hello.txt is not listed"}}
	for _, c := range []Check{fail, {Name: "lint", Conclusion: "success"}, {Name: "slow", Status: "in_progress"}} {
		if err := tr.SetCheck(ctx, "demo/hello", main, c); err != nil {
			t.Fatal(err)
		}
	}
	st, err = tr.PRState(ctx, "demo/hello", pr.Number)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Pending || len(st.FailedChecks) != 1 {
		t.Fatalf("checks: pending %v, failed %+v; want pending and one failure", st.Pending, st.FailedChecks)
	}
	fc := st.FailedChecks[0]
	if fc.Name != "ci" || fc.Conclusion != "failure" || fc.Title != fail.Title || fc.Summary != fail.Summary ||
		fc.LogTail != fail.Log || len(fc.Annotations) != 1 || fc.Annotations[0].Path != "README.md" || fc.Annotations[0].StartLine != 3 {
		t.Fatalf("failed check %+v", fc)
	}

	// A push moves the head: the old commit's checks no longer count.
	fix := gittest.Run(t, dir, "--git-dir", remote, "commit-tree", "-m", "fix", "-p", main, main+"^{tree}")
	gittest.Run(t, dir, "--git-dir", remote, "update-ref", "refs/heads/ace/1-x", fix)
	if err := tr.SetCheck(ctx, "demo/hello", fix, Check{Name: "ci", Conclusion: "success"}); err != nil {
		t.Fatal(err)
	}
	st, err = tr.PRState(ctx, "demo/hello", pr.Number)
	if err != nil || st.HeadSHA != fix || st.Pending || len(st.FailedChecks) != 0 {
		t.Fatalf("after the push: %+v %v", st, err)
	}

	if err := tr.MergePR(ctx, "demo/hello", pr.Number); err != nil {
		t.Fatal(err)
	}
	st, err = tr.PRState(ctx, "demo/hello", pr.Number)
	if err != nil || st.State != "closed" || !st.Merged {
		t.Fatalf("after the merge: %+v %v", st, err)
	}
	if is, _ := tr.Issue(ctx, "demo/hello", 1); is.State != "closed" {
		t.Errorf("issue 1 is %s: the merge of a pull request that closes it must close it", is.State)
	}
	if f, _ := tr.FindPR(ctx, "demo/hello", "ace/1-x"); f != nil {
		t.Errorf("FindPR found the merged pull request %+v", f)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "pulls", "1.md")); !strings.Contains(string(data), "merged = true") ||
		!strings.HasSuffix(string(data), "Closes #1") {
		t.Errorf("pulls/1.md:\n%s", data)
	}
}

func TestSetCheckRejectsPathsAndNonSHAs(t *testing.T) {
	t.Parallel()
	tr, err := New(folder(t))
	if err != nil {
		t.Fatal(err)
	}
	sha := strings.Repeat("ab", 20)
	for _, c := range []struct{ sha, name string }{{sha, "../escape"}, {sha, "a/b"}, {sha, ""}, {"../x", "ci"}, {"main", "ci"}} {
		err := tr.SetCheck(context.Background(), "demo/hello", c.sha, Check{Name: c.name, Conclusion: "success"})
		if !errors.Is(err, tracker.ErrValidation) {
			t.Errorf("SetCheck(%q, %q) = %v, want a validation error", c.sha, c.name, err)
		}
	}
	if _, err := tr.PRState(context.Background(), "demo/hello", 7); !errors.Is(err, tracker.ErrNotFound) {
		t.Errorf("PRState of a missing pull request: %v", err)
	}
}

// TestHandWrittenCheck: a check file written by hand (YAML front matter here) reads like one SetCheck wrote.
func TestHandWrittenCheck(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := folder(t)
	remote := gittest.BareRepo(t, dir, "remote", nil)
	tr, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	sha := gittest.Run(t, dir, "--git-dir", remote, "rev-parse", "main")
	gittest.Run(t, dir, "--git-dir", remote, "branch", "ace/1-x", "main")
	pr, err := tr.CreatePR(ctx, "demo/hello", tracker.NewPR{Title: "t", Head: "ace/1-x", Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	check := "---\nconclusion: timed_out\ntitle: lint took too long\nannotations:\n  - path: main.go\n    start_line: 7\n    message: slow\n---\nlint: killed after 10m\n"
	if err := os.MkdirAll(filepath.Join(dir, "checks", sha), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "checks", sha, "lint.md"), []byte(check), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := tr.PRState(ctx, "demo/hello", pr.Number)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.FailedChecks) != 1 {
		t.Fatalf("failed checks %+v", st.FailedChecks)
	}
	fc := st.FailedChecks[0]
	if fc.Name != "lint" || fc.Conclusion != "timed_out" || fc.Title != "lint took too long" || fc.LogTail != "lint: killed after 10m\n" ||
		len(fc.Annotations) != 1 || fc.Annotations[0].Path != "main.go" || fc.Annotations[0].StartLine != 7 {
		t.Fatalf("hand-written check read as %+v", fc)
	}
}

// TestMergedPRsAreTheMergedFilesThatNameTheirMergeCommit: a merged pull request is a source of tasks once its file
// names the commit its merge made; open ones, closed ones and merged ones without it are not.
func TestMergedPRsAreTheMergedFilesThatNameTheirMergeCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := folder(t)
	write := func(n, front, body string) {
		if err := os.MkdirAll(filepath.Join(dir, "pulls"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "pulls", n+".md"), []byte("+++\n"+front+"+++\n"+body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("4", "title = \"Fix it\"\nhead = \"fix\"\nbase = \"main\"\nstate = \"closed\"\nmerged = true\nmerge_commit = \""+
		strings.Repeat("a", 40)+"\"\nmerged_at = 2026-02-01T00:00:00Z\n", "Fixes #1 and closes demo/hello#2.\n")
	write("5", "title = \"Newer\"\nhead = \"n\"\nbase = \"main\"\nstate = \"closed\"\nmerged = true\nmerge_commit = \""+
		strings.Repeat("b", 40)+"\"\nmerged_at = 2026-03-01T00:00:00Z\n", "No issue.\n")
	write("6", "title = \"Merged, commit unknown\"\nhead = \"u\"\nbase = \"main\"\nstate = \"closed\"\nmerged = true\n", "Fixes #3\n")
	write("7", "title = \"Open\"\nhead = \"o\"\nbase = \"main\"\nstate = \"open\"\n", "Fixes #3\n")
	tr, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	prs, err := tr.MergedPRs(ctx, "demo/hello", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(prs) != 2 || prs[0].Number != 5 || prs[1].Number != 4 {
		t.Fatalf("merged pull requests %+v, want #5 then #4", prs)
	}
	if p := prs[1]; p.MergeCommit != strings.Repeat("a", 40) || p.Base != "main" || !slices.Equal(p.Closes, []int{1, 2}) {
		t.Fatalf("#4 read as %+v", p)
	}
	prs, err = tr.MergedPRs(ctx, "demo/hello", time.Date(2026, 2, 15, 0, 0, 0, 0, time.UTC))
	if err != nil || len(prs) != 1 || prs[0].Number != 5 {
		t.Fatalf("merged since Feb 15: %+v, %v; want #5 alone", prs, err)
	}
}
