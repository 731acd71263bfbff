package github

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/fakegithub"
	"github.com/aceworks/ace/pkg/tracker"
)

const repo = "acme/widgets"

type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(_ context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d = append(s.d, d)
	return nil
}

func setup(t *testing.T) (*fakegithub.Server, *Client, *sleeps) {
	t.Helper()
	gh := fakegithub.New(t)
	gh.AddUser("ace-bot", "bot-token")
	gh.AddRepo(repo, fakegithub.RepoOptions{CloneURL: "https://example.invalid/acme/widgets.git"})
	s := &sleeps{}
	c, err := New(context.Background(), Options{APIURL: gh.URL(), Token: "bot-token", Sleep: s.sleep})
	if err != nil {
		t.Fatal(err)
	}
	return gh, c, s
}

func TestListLabeledExcludesPRsAndUses304(t *testing.T) {
	gh, c, _ := setup(t)
	ctx := context.Background()
	for i := 1; i <= 120; i++ {
		gh.AddIssue(repo, fakegithub.IssueOptions{Title: "issue " + strconv.Itoa(i), Labels: []string{"ace"}, Author: "alice",
			Created: time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC), IsPR: i%10 == 0})
	}
	list, err := c.ListLabeled(ctx, repo, "ace")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 108 {
		t.Fatalf("%d issues, want 108 (120 minus 12 PRs, over 2 pages)", len(list))
	}
	for _, is := range list {
		if is.IsPR {
			t.Fatal("a pull request was listed")
		}
	}
	_, full1, _ := gh.Counts()
	if _, err := c.ListLabeled(ctx, repo, "ace"); err != nil {
		t.Fatal(err)
	}
	_, full2, notMod := gh.Counts()
	if full2 != full1 || notMod < 2 {
		t.Fatalf("unchanged list cost %d full responses and %d 304s; want 0 and 2", full2-full1, notMod)
	}
}

func TestRetriesRateLimitsAndServerErrors(t *testing.T) {
	gh, c, s := setup(t)
	ctx := context.Background()
	gh.Inject(fakegithub.Fault{Status: 403, Header: map[string]string{"Retry-After": "1"}, Body: `{"message":"You have exceeded a secondary rate limit"}`})
	if _, err := c.Repo(ctx, repo); err != nil {
		t.Fatal(err)
	}
	if len(s.d) != 1 || s.d[0] < time.Second {
		t.Fatalf("secondary limit waits %v, want one ≥ 1s", s.d)
	}
	gh.Inject(fakegithub.Fault{Status: 502}, fakegithub.Fault{Status: 502}, fakegithub.Fault{Status: 502})
	r, err := c.Repo(ctx, repo)
	if err != nil || r.DefaultBranch != "main" {
		t.Fatalf("after three 502s: %+v %v", r, err)
	}
	reset := strconv.FormatInt(time.Now().Add(2*time.Second).Unix(), 10)
	gh.Inject(fakegithub.Fault{Status: 403, Header: map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset}, Body: `{"message":"API rate limit exceeded"}`})
	if _, err := c.Repo(ctx, repo); err != nil {
		t.Fatal(err)
	}
	if last := s.d[len(s.d)-1]; last < time.Second || last > 5*time.Second {
		t.Fatalf("primary limit wait %v, want until the reset", last)
	}
}

func TestTypedErrors(t *testing.T) {
	gh, _, _ := setup(t)
	bad, _ := New(context.Background(), Options{APIURL: gh.URL(), Token: "nope"})
	_, err := bad.Repo(context.Background(), repo)
	if !errors.Is(err, tracker.ErrUnauthorized) || !strings.Contains(err.Error(), "token_env") {
		t.Fatalf("401: %v", err)
	}
	_, c, _ := setup(t)
	if _, err := c.Issue(context.Background(), repo, 999); !errors.Is(err, tracker.ErrNotFound) {
		t.Fatalf("404: %v", err)
	}
}

func TestWritesAreIdempotent(t *testing.T) {
	gh, c, _ := setup(t)
	ctx := context.Background()
	n := gh.AddIssue(repo, fakegithub.IssueOptions{Title: "x", Author: "alice"})
	for i := 0; i < 2; i++ {
		if err := c.AddLabels(ctx, repo, n, "ace:running"); err != nil {
			t.Fatal(err)
		}
	}
	if got := gh.Issue(repo, n).Labels; !slices.Equal(got, []string{"ace:running"}) {
		t.Fatalf("labels %v", got)
	}
	if err := c.RemoveLabel(ctx, repo, n, "not-there"); err != nil {
		t.Fatalf("removing an absent label: %v", err)
	}
	pr1, err := c.CreatePR(ctx, repo, tracker.NewPR{Title: "t", Body: "Closes #1", Head: "ace/1-x", Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	pr2, err := c.CreatePR(ctx, repo, tracker.NewPR{Title: "t", Body: "Closes #1", Head: "ace/1-x", Base: "main"})
	if err != nil || pr2.Number != pr1.Number {
		t.Fatalf("second CreatePR: %+v %v, want PR #%d", pr2, err, pr1.Number)
	}
	if len(gh.PRs(repo)) != 1 {
		t.Fatal("two pull requests opened")
	}
	found, err := c.FindPR(ctx, repo, "ace/1-x")
	if err != nil || found == nil || found.Number != pr1.Number {
		t.Fatalf("FindPR: %+v %v", found, err)
	}
}

func TestStickyCommentLabelerAndPermission(t *testing.T) {
	gh, c, _ := setup(t)
	ctx := context.Background()
	n := gh.AddIssue(repo, fakegithub.IssueOptions{Title: "x", Author: "alice"})
	gh.AddComment(repo, n, "mallory", "<!-- ace:status --> fake status by someone else")
	if cm, err := c.FindComment(ctx, repo, n, "<!-- ace:status -->"); err != nil || cm != nil {
		t.Fatalf("someone else's comment counted as ace's: %+v %v", cm, err)
	}
	mine, err := c.CreateComment(ctx, repo, n, "<!-- ace:status --> working")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.EditComment(ctx, repo, mine.ID, "<!-- ace:status --> done"); err != nil {
		t.Fatal(err)
	}
	cm, err := c.FindComment(ctx, repo, n, "<!-- ace:status -->")
	if err != nil || cm == nil || cm.ID != mine.ID || !strings.Contains(cm.Body, "done") {
		t.Fatalf("FindComment: %+v %v", cm, err)
	}
	gh.SetPermission(repo, "reader", "read")
	gh.SetPermission(repo, "writer", "write")
	gh.Label(repo, n, "ace", "writer")
	gh.Label(repo, n, "ace", "reader") // the latest labeling counts
	who, err := c.Labeler(ctx, repo, n, "ace")
	if err != nil || who != "reader" {
		t.Fatalf("labeler %q %v", who, err)
	}
	for user, want := range map[string]bool{"reader": false, "writer": true, "stranger": false} {
		p, err := c.Permission(ctx, repo, user)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.AtLeast(tracker.PermWrite); got != want {
			t.Errorf("%s (%s) at least write = %v", user, p, got)
		}
	}
}
