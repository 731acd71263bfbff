package eval

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/tracker"
)

// TestRecorderAnswersEveryQuestionAndPostsNothing: the recorder's issue is the item's task (the problem
// statement's first line the title); the task has no comments, and the engine's look for an answer after a
// question — a reading of the comments after a time, even in a fresh recorder (ace restarted) — finds exactly one,
// "decide yourself", dated after the question, by a user with the admin permission who is not ace. What would be
// posted is recorded; no pull request is found, one created names no place.
func TestRecorderAnswersEveryQuestionAndPostsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	task := &Task{InstanceID: "acme__calc-4", ProblemStatement: "no mul\nWe need mul.\n\nSoon."}
	rc := NewRecorder("acme/calc", "main", func(n int) (Item, *Task, error) {
		if n != 3 {
			return Item{}, nil, errors.New("no such item")
		}
		return Item{N: 3, InstanceID: task.InstanceID}, task, nil
	})
	iss, err := rc.Issue(ctx, "acme/calc", 3)
	if err != nil || iss.Title != "no mul" || iss.Body != "We need mul.\n\nSoon." || iss.State != "open" || iss.Number != 3 {
		t.Fatalf("issue %+v, %v", iss, err)
	}
	if _, err := rc.Issue(ctx, "acme/calc", 4); !errors.Is(err, tracker.ErrNotFound) {
		t.Errorf("an issue of no item: %v, want not found", err)
	}
	if _, err := rc.Issue(ctx, "acme/other", 3); !errors.Is(err, tracker.ErrNotFound) {
		t.Errorf("another repository's issue: %v, want not found", err)
	}
	if cs, err := rc.Comments(ctx, "acme/calc", 3, time.Time{}); err != nil || len(cs) != 0 {
		t.Errorf("the task's comments: %v, %v; want none", cs, err)
	}
	asked := time.Now().Add(time.Hour) // a clock ahead of the recorder's: the answer is still after the question
	for _, r := range []*Recorder{rc, NewRecorder("acme/calc", "main", rc.task)} {
		cs, err := r.Comments(ctx, "acme/calc", 3, asked)
		if err != nil || len(cs) != 1 || cs[0].Body != Answer || !cs[0].CreatedAt.After(asked) {
			t.Fatalf("comments after the question: %+v, %v", cs, err)
		}
		self, _ := r.Self(ctx)
		if p, _ := r.Permission(ctx, "acme/calc", cs[0].Author); cs[0].Author == self || !p.AtLeast(tracker.PermWrite) {
			t.Errorf("the answer's author %q (ace is %q) has permission %s", cs[0].Author, self, p)
		}
	}
	if p, _ := rc.Permission(ctx, "acme/calc", "mallory"); p != tracker.PermNone {
		t.Errorf("anyone else's permission: %s", p)
	}
	if _, err := rc.CreateComment(ctx, "acme/calc", 3, "<!-- ace:status -->\n**ace** · on it"); err != nil {
		t.Fatal(err)
	}
	_ = rc.AddLabels(ctx, "acme/calc", 3, "ace:running")
	if pr, _ := rc.FindPR(ctx, "acme/calc", "ace/3-no-mul"); pr != nil {
		t.Errorf("found a pull request %+v", pr)
	}
	pr, err := rc.CreatePR(ctx, "acme/calc", tracker.NewPR{Title: "no mul", Head: "ace/3-no-mul", Base: "main"})
	if err != nil || !strings.HasPrefix(pr.URL, "eval:") {
		t.Fatalf("pull request %+v, %v", pr, err)
	}
	if got := rc.Posts(3); !slices.Equal(got, []string{"comment: <!-- ace:status -->", "labels: +ace:running"}) {
		t.Errorf("posts on issue 3: %q", got)
	}
	if got := rc.Posts(0); len(got) != 1 || !strings.Contains(got[0], "ace/3-no-mul → main") {
		t.Errorf("pull requests recorded: %q", got)
	}
	if repo, _ := rc.Repo(ctx, "acme/calc"); repo.CloneURL != "" || repo.DefaultBranch != "main" {
		t.Errorf("repository %+v: the runs' remotes are their cut bases, never a clone URL", repo)
	}
}

// TestRecorderLeavesTheBudgetQuestionUnanswered: a run at its budget asks whether to go on; the recorder does not
// answer (each answer would grant another budget), while the next question of the run is answered again.
func TestRecorderLeavesTheBudgetQuestionUnanswered(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rc := NewRecorder("acme/calc", "main", func(int) (Item, *Task, error) { return Item{}, &Task{}, nil })
	ask := func(body string) []tracker.Comment {
		t.Helper()
		if _, err := rc.CreateComment(ctx, "acme/calc", 2, "<!-- ace:question:9:1 -->\n**ace** · the agent needs input.\n\n> "+body); err != nil {
			t.Fatal(err)
		}
		cs, err := rc.Comments(ctx, "acme/calc", 2, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	if cs := ask("The run reached its budget: it spent $1.00 (budget.run: $1.00)."); len(cs) != 0 {
		t.Errorf("the budget question was answered: %+v", cs)
	}
	if cs := ask("Which way?"); len(cs) != 1 || cs[0].Body != Answer {
		t.Errorf("the next question's answers: %+v", cs)
	}
}
