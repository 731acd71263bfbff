package workflow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tracker"
)

// humans is the run's conversation with people on the issue: a question posted, an answer found and checked, and
// given to the agent.
type humans struct {
	core    humansCore
	tracker humansTracker
	status  *reporter
	cfg     *config.Config // the labels and the trigger's policy
	now     func() time.Time
	log     *slog.Logger
	// askMu orders the questions of best-of attempts, so that they find each other's on the issue.
	askMu sync.Mutex
}

// humansCore is what humans need of the engine's core: the run's events, its runner (the answer queued, how it
// went in) and its done-protocol files (the question file).
type humansCore interface {
	event(ctx context.Context, r *store.Run, kind EventKind, msg string)
	runner(r *store.Run) Runner
	readProtocolFile(ctx context.Context, r *store.Run, rel string) (text string, ok bool)
}

// humansTracker is the tracker as humans use it: the question's comment, the comments since, who may answer.
type humansTracker interface {
	FindComment(ctx context.Context, repo string, number int, marker string) (*tracker.Comment, error)
	CreateComment(ctx context.Context, repo string, number int, body string) (*tracker.Comment, error)
	EditComment(ctx context.Context, repo string, id int64, body string) (*tracker.Comment, error)
	Comments(ctx context.Context, repo string, number int, since time.Time) ([]tracker.Comment, error)
	Self(ctx context.Context) (string, error)
	Permission(ctx context.Context, repo, user string) (tracker.Permission, error)
}

// askHuman posts the agent's question on the issue, labels it as needing input and parks the run in
// waiting_input. Comments after the question by a trusted user become the answer.
func (hu *humans) askHuman(ctx context.Context, r *store.Run, question, screen string) error {
	n := r.State.Questions + 1
	marker := fmt.Sprintf("<!-- ace:question:%d:%d -->", r.ID, n)
	body := marker + "\n**ace** · the agent working on this issue needs input.\n\n" + quote(question)
	asked := question
	qt := questionText(screen)
	if qt != "" {
		asked = strings.TrimSpace(qt) + "\n\n(" + question + ")"
		// The question and its options as text; the whole screen folded below.
		body += "\n\n" + quote(qt) + "\n\nAnswer with an option's number or words, or in your own words." +
			"\n\n<details><summary>Its screen</summary>\n\n" + quote(screen) + "\n\n</details>"
	} else if screen != "" {
		body += "\n\nIts screen:\n\n" + quote(screen)
	}
	body += fmt.Sprintf("\n\nReply in a comment: ace types your answer into the agent's session. "+
		"(Or answer directly: `ace attach %d`, `ace send %d \"…\"`.)", r.Issue, r.Issue)
	if a := r.State.AttemptOf; a != nil {
		// One question on the issue for the attempts of a best-of run (bestof_ask.go).
		hu.askMu.Lock()
		defer hu.askMu.Unlock()
		q, err := hu.attemptsQuestion(ctx, r)
		if err != nil {
			return err
		}
		if q != nil {
			shown := question // what the comment shows of this attempt's question: its menu where it has one
			if qt != "" {
				shown = qt
			}
			return hu.joinQuestion(ctx, r, q, shown, asked)
		}
		body = marker + "\n" + attemptsMarker(a.Parent) + strings.TrimPrefix(body, marker)
	}
	existing, err := hu.tracker.FindComment(ctx, r.Repo, r.Issue, marker)
	if err != nil {
		return trackerErr(fmt.Errorf("find question comment: %w", err))
	}
	if existing == nil {
		if _, err := hu.tracker.CreateComment(ctx, r.Repo, r.Issue, body); err != nil {
			return trackerErr(fmt.Errorf("post the question: %w", err))
		}
	}
	if err := hu.status.setLabels(ctx, r, []string{hu.cfg.Labels.NeedsInput}); err != nil {
		return trackerErr(err)
	}
	r.State.Question = asked // what ace show and the check read: the menu's question where there is one
	r.State.QuestionAt = hu.now()
	r.State.Questions = n
	if err := hu.status.postStatus(ctx, r, statusView{Status: store.StatusWaitingInput, Headline: "waiting for your answer (see the question below)"}); err != nil {
		return trackerErr(err)
	}
	hu.core.event(ctx, r, "question", firstLine(asked))
	return nil
}

// recordAnswer changes the run for an answer that reached the agent (typed) or is to (queued for its next
// turn): the question is cleared, and for a waiting run next is its way back to work — monitor, or
// deliver_prompt when the answer passed a screen before the task. It types nothing, so it can be redone on a
// fresh run.
func (hu *humans) recordAnswer(ctx context.Context, r *store.Run, answer string) (next Result, err error) {
	hu.core.runner(r).Queue(r, answer)
	// The question file is cleared when it holds the question answered. One the agent wrote since is a new
	// question: the permission just answered may have been the one to write it (gemini wrote .ace/QUESTION the
	// moment its write was allowed, and ace cleared it as the answered question's).
	if q, ok := hu.core.readProtocolFile(ctx, r, questionFile); ok && (q == "" || q == r.State.Question) {
		if err := removeProtocolFile(r, questionFile); err != nil {
			return Result{}, fmt.Errorf("clear the question: %w", err)
		}
	}
	if r.Status != store.StatusWaitingInput {
		return Result{}, nil
	}
	budgetGranted(r)
	return hu.backToWork(ctx, r, "working (answer received)")
}

// toHumanInWords parks r in waiting_input on what its agent said in words (its .ace/QUESTION, its budget, a
// headless turn's last words), not on a screen only its process shows: its idle agent may give its slot away
// meanwhile, and the answer then starts it again in its conversation (slots.go).
func toHumanInWords(r *store.Run) Result {
	r.State.InWords = true
	return toHuman()
}

// backToWork takes a run that waited for a human back to work: the needs-input label off, the question cleared,
// the status comment's headline; next is monitor, or deliver_prompt when the answer passed a screen before the
// task.
func (hu *humans) backToWork(ctx context.Context, r *store.Run, headline string) (next Result, err error) {
	if err := hu.status.setLabels(ctx, r, nil, hu.cfg.Labels.NeedsInput); err != nil {
		return Result{}, trackerErr(err)
	}
	next = Goto(StepMonitor).With(store.StatusActive)
	if !r.State.PromptDelivered {
		next.Next = StepDeliver
	}
	r.Nudges = 0
	r.State.Question, r.State.InWords = "", false
	// Time spent waiting for a human does not count against monitor.timeout.
	r.State.MonitorSince = hu.now()
	if err := hu.status.postStatus(ctx, r, statusView{Status: store.StatusActive, Headline: headline}); err != nil {
		return Result{}, trackerErr(err)
	}
	return next, nil
}

// questionGone takes back to work a run whose question no longer waits for an answer (why: the agent withdrew
// it, say), with an event saying so; the status comment tells the human the question needs no answer.
func (hu *humans) questionGone(ctx context.Context, r *store.Run, why string) (Result, error) {
	next, err := hu.backToWork(ctx, r, "working (the question above needs no answer any more: "+why+")")
	if err != nil {
		return Result{}, err
	}
	hu.core.event(ctx, r, EventWithdrawn, why)
	return next, nil
}

// answerEvent records who answered (empty: ace send) and how the answer went in.
func (hu *humans) answerEvent(ctx context.Context, r *store.Run, who string) {
	src := "ace send"
	if who != "" {
		src = "@" + who
	}
	hu.core.event(ctx, r, "answer", "answer from "+src+" "+hu.core.runner(r).Delivery())
}

// findAnswer returns the comments made after the question by trusted humans (never ace itself), joined.
func (hu *humans) findAnswer(ctx context.Context, r *store.Run, asked time.Time) (who, answer string, err error) {
	comments, err := hu.tracker.Comments(ctx, r.Repo, r.Issue, asked)
	if err != nil {
		return "", "", trackerErr(fmt.Errorf("read comments: %w", err))
	}
	self, err := hu.tracker.Self(ctx)
	if err != nil {
		return "", "", trackerErr(fmt.Errorf("who am I: %w", err))
	}
	var parts []string
	for _, c := range comments {
		if !c.CreatedAt.After(asked) || isAceComment(c.Body) || strings.EqualFold(c.Author, self) {
			continue
		}
		ok, err := hu.trustedUser(ctx, r.Repo, c.Author)
		if err != nil {
			return "", "", err
		}
		if !ok {
			hu.log.InfoContext(ctx, "ignoring a comment from an untrusted user", "repo", r.Repo, "issue", r.Issue, "user", c.Author)
			continue
		}
		who = c.Author
		parts = append(parts, strings.TrimSpace(c.Body))
	}
	return who, strings.Join(parts, "\n\n"), nil
}

// trustedUser applies the trigger policy to a commenter: allowed_users, else at least min_permission.
func (hu *humans) trustedUser(ctx context.Context, repo, user string) (bool, error) {
	t := hu.cfg.Trigger
	if slices.ContainsFunc(t.AllowedUsers, func(u string) bool { return strings.EqualFold(u, user) }) {
		return true, nil
	}
	if strings.HasSuffix(user, "[bot]") {
		return false, nil
	}
	p, err := hu.tracker.Permission(ctx, repo, user)
	if err != nil {
		if errors.Is(err, tracker.ErrNotFound) {
			return false, nil
		}
		return false, trackerErr(fmt.Errorf("permission of %s: %w", user, err))
	}
	return p.AtLeast(tracker.Permission(t.MinPermission)), nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// isAceComment reports whether a comment was written by ace itself (status, questions): those are not part of
// the task and never count as a human's answer.
func isAceComment(body string) bool {
	return strings.Contains(body, "<!-- ace:")
}

// questionText is what a menu on screen asks, as text for the issue: the lines above its options (the
// question) and the options themselves; "" when the screen shows no menu.
func questionText(screen string) string {
	m, ok := agents.ParseMenu(screen)
	if !ok {
		return ""
	}
	return m.Question + "\n\n" + m.Describe()
}
