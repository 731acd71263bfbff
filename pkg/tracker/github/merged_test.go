package github

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/fakegithub"
	"github.com/aceworks/ace/pkg/tracker"
)

func TestMergedPRsListsMergedOnesNewestFirstSince(t *testing.T) {
	gh, c, _ := setup(t)
	ctx := context.Background()
	day := func(d int) time.Time { return time.Date(2026, 3, d, 12, 0, 0, 0, time.UTC) }
	issue := gh.AddIssue(repo, fakegithub.IssueOptions{Title: "crash on empty input", Author: "alice"})
	sha := func(c byte) string { return string(slices.Repeat([]byte{c}, 40)) }
	old := gh.AddMergedPR(repo, fakegithub.MergedPR{Title: "old", Body: "Fixes #1", Head: "a", MergeCommit: sha('a'), MergedAt: day(1)})
	fix := gh.AddMergedPR(repo, fakegithub.MergedPR{Title: "Handle empty input", Body: "Fixes #1, see #2", Head: "fix",
		Author: "bob", HeadSHA: sha('c'), BaseSHA: sha('b'), MergeCommit: sha('d'), Created: day(9), MergedAt: day(10)})
	chore := gh.AddMergedPR(repo, fakegithub.MergedPR{Title: "chore", Head: "chore", MergeCommit: sha('e'), MergedAt: day(12)})
	rejected, err := c.CreatePR(ctx, repo, tracker.NewPR{Title: "rejected", Body: "Fixes #1", Head: "no", Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	gh.ClosePR(repo, rejected.Number) // closed without a merge: no task
	if _, err := c.CreatePR(ctx, repo, tracker.NewPR{Title: "open", Body: "Fixes #1", Head: "open", Base: "main"}); err != nil {
		t.Fatal(err)
	}
	if gh.Issue(repo, issue).State != "closed" {
		t.Fatal("the merge did not close the issue its body closes")
	}

	all, err := c.MergedPRs(ctx, repo, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var nums []int
	for _, p := range all {
		nums = append(nums, p.Number)
	}
	if want := []int{chore, fix, old}; !slices.Equal(nums, want) {
		t.Fatalf("merged pull requests %v, want %v (newest merge first)", nums, want)
	}
	got := all[1]
	if got.Title != "Handle empty input" || got.Author != "bob" || got.MergeCommit != sha('d') || got.BaseSHA != sha('b') ||
		got.HeadSHA != sha('c') || got.Base != "main" || !got.MergedAt.Equal(day(10)) || !got.CreatedAt.Equal(day(9)) ||
		!slices.Equal(got.Closes, []int{issue}) {
		t.Fatalf("pull request read as %+v", got)
	}

	since, err := c.MergedPRs(ctx, repo, day(10))
	if err != nil {
		t.Fatal(err)
	}
	if len(since) != 2 || since[1].Number != fix {
		t.Fatalf("merged since the 10th: %+v, want the two merged from then on", since)
	}
}
