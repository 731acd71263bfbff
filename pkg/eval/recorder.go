package eval

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aceworks/ace/pkg/tracker"
)

// Answer is what every question an agent asks during an eval run gets: nobody is there to answer, and a human's
// help would measure the human.
const Answer = "decide yourself"

// answerer signs the answers: a login of no one, whom the recorder gives the admin permission.
const answerer = "ace-eval"

// Recorder is the tracker of ace eval run's engine: the issues are the tasks (issue N is item N's task, its
// problem statement the title and body), and what the engine would post — labels, status comments, questions,
// a pull request — is recorded here instead, never sent anywhere. A question is answered at once, with Answer:
// the engine's look for an answer (the only reading of comments after a time) finds one comment of answerer's,
// dated after the question. It keeps nothing across a restart that the engine needs: a resumed run waiting for
// its answer finds it all the same. A run at its budget is asked whether to go on; that question it leaves
// unanswered (an answer would grant one more budget, and another, without end): the driver stops such a run. The
// repository's clone URL is empty: its runs' remotes are their cut bases (RunWorkspaces).
type Recorder struct {
	tracker.NoCredential // eval runs push nowhere and reach no tracker: no credential for anyone

	repo, branch string
	task         func(n int) (Item, *Task, error)
	now          func() time.Time

	mu     sync.Mutex
	next   int64
	posts  map[int][]string // by issue: what was posted ("comment: …", "labels: …", "pull request: …")
	budget map[int]bool     // issues whose last question is whether to go on past the run's budget
}

// Markers of the engine's comments the recorder reads: a question (humans.go), and the one a run at its budget
// asks (budget.go).
const (
	questionMarker = "<!-- ace:question:"
	budgetWords    = "reached its budget"
)

// NewRecorder records for repo's eval runs, whose default branch is branch; task gives item n and its task.
func NewRecorder(repo, branch string, task func(n int) (Item, *Task, error)) *Recorder {
	return &Recorder{repo: repo, branch: branch, task: task, now: time.Now, posts: map[int][]string{}, budget: map[int]bool{}}
}

// Posts are what the engine posted on issue n, in order.
func (rc *Recorder) Posts(n int) []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]string(nil), rc.posts[n]...)
}

func (rc *Recorder) post(n int, what string) int64 {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.next++
	rc.posts[n] = append(rc.posts[n], what)
	return rc.next
}

func (rc *Recorder) check(repo string) error {
	if repo != rc.repo {
		return &tracker.Error{Op: "eval: repository " + repo, Kind: tracker.ErrNotFound}
	}
	return nil
}

// Issue is item n's task as an issue: the problem statement's first line its title, the rest its body.
func (rc *Recorder) Issue(_ context.Context, repo string, n int) (*tracker.Issue, error) {
	if err := rc.check(repo); err != nil {
		return nil, err
	}
	it, t, err := rc.task(n)
	if err != nil {
		return nil, &tracker.Error{Op: fmt.Sprintf("eval: issue %d", n), Message: err.Error(), Kind: tracker.ErrNotFound}
	}
	title, body, _ := strings.Cut(strings.TrimSpace(t.ProblemStatement), "\n")
	if title == "" {
		title = it.InstanceID
	}
	return &tracker.Issue{Repo: repo, Number: n, Title: title, Body: strings.TrimSpace(body), Author: answerer,
		State: "open", CreatedAt: t.CreatedAt, UpdatedAt: t.CreatedAt}, nil
}

// Comments are none for the task (ACE_TASK.md holds the problem statement alone); asked for those after a time —
// the engine looking for the answer to the question it asked then — the fixed answer, dated just after, unless
// the question is the budget's.
func (rc *Recorder) Comments(_ context.Context, repo string, n int, since time.Time) ([]tracker.Comment, error) {
	if err := rc.check(repo); err != nil || since.IsZero() {
		return nil, err
	}
	rc.mu.Lock()
	atBudget := rc.budget[n]
	rc.mu.Unlock()
	if atBudget {
		return nil, nil
	}
	at := rc.now()
	if !at.After(since) {
		at = since.Add(time.Millisecond)
	}
	return []tracker.Comment{{ID: -int64(n), Author: answerer, Body: Answer, CreatedAt: at, UpdatedAt: at}}, nil
}

// ListLabeled lists nothing: eval runs are started by ace eval run alone, never dispatched.
func (rc *Recorder) ListLabeled(context.Context, string, string) ([]tracker.Issue, error) {
	return nil, nil
}

func (rc *Recorder) AddLabels(_ context.Context, _ string, n int, labels ...string) error {
	rc.post(n, "labels: +"+strings.Join(labels, " +"))
	return nil
}

func (rc *Recorder) RemoveLabel(_ context.Context, _ string, n int, label string) error {
	rc.post(n, "labels: -"+label)
	return nil
}

func (rc *Recorder) CreateComment(_ context.Context, _ string, n int, body string) (*tracker.Comment, error) {
	id := rc.post(n, "comment: "+firstLineOf(body))
	if strings.Contains(body, questionMarker) {
		rc.mu.Lock()
		rc.budget[n] = strings.Contains(body, budgetWords)
		rc.mu.Unlock()
	}
	at := rc.now()
	return &tracker.Comment{ID: id, Author: "ace", Body: body, CreatedAt: at, UpdatedAt: at}, nil
}

func (rc *Recorder) EditComment(_ context.Context, _ string, id int64, body string) (*tracker.Comment, error) {
	at := rc.now()
	return &tracker.Comment{ID: id, Author: "ace", Body: body, CreatedAt: at, UpdatedAt: at}, nil
}

// FindComment finds none: a status comment is posted anew after a restart, which nobody reads.
func (rc *Recorder) FindComment(context.Context, string, int, string) (*tracker.Comment, error) {
	return nil, nil
}

func (rc *Recorder) Labeler(context.Context, string, int, string) (string, error) {
	return answerer, nil
}

// Permission is admin for the answerer, none for anyone else.
func (rc *Recorder) Permission(_ context.Context, _, user string) (tracker.Permission, error) {
	if user == answerer {
		return tracker.PermAdmin, nil
	}
	return tracker.PermNone, nil
}

func (rc *Recorder) Repo(_ context.Context, repo string) (*tracker.Repo, error) {
	if err := rc.check(repo); err != nil {
		return nil, err
	}
	return &tracker.Repo{FullName: repo, DefaultBranch: rc.branch, Private: true}, nil
}

// FindPR finds none: each finalize records its pull request anew.
func (rc *Recorder) FindPR(context.Context, string, string) (*tracker.PullRequest, error) {
	return nil, nil
}

// CreatePR records the pull request the run would open (under issue 0: a pull request names its branch, not its
// issue); its URL names no place.
func (rc *Recorder) CreatePR(_ context.Context, _ string, pr tracker.NewPR) (*tracker.PullRequest, error) {
	n := rc.post(0, "pull request: "+pr.Head+" → "+pr.Base+": "+pr.Title)
	return &tracker.PullRequest{Number: int(n), URL: "eval:" + pr.Head, State: "open", Head: pr.Head, Base: pr.Base,
		Title: pr.Title, Body: pr.Body, Draft: pr.Draft}, nil
}

func (rc *Recorder) Self(context.Context) (string, error) { return "ace", nil }

func firstLineOf(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
