package workflow

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tracker"
)

// The attempts of a best-of run share the issue: the human is asked once, and the one answer goes to every attempt
// that asked. An attempt's question comment carries its parent's mark besides its own; an attempt that asks while
// a question of its parent's attempts waits on the issue unanswered joins it — no comment of its own, the same
// moment asked — so that the answer after it is found by each (waitingInput).

// attemptsMarker marks the question comments of parent's attempts.
func attemptsMarker(parent int64) string {
	return fmt.Sprintf("<!-- ace:best-of-question:%d -->", parent)
}

// attemptsQuestion is the question of r's sibling attempts that waits on the issue for an answer, nil when none
// does (none asked, or a human answered the last one). The caller holds hu.askMu.
func (hu *humans) attemptsQuestion(ctx context.Context, r *store.Run) (*tracker.Comment, error) {
	comments, err := hu.tracker.Comments(ctx, r.Repo, r.Issue, time.Time{})
	if err != nil {
		return nil, trackerErr(fmt.Errorf("read comments: %w", err))
	}
	mark := attemptsMarker(r.State.AttemptOf.Parent)
	var last *tracker.Comment
	for i := range comments {
		if strings.Contains(comments[i].Body, mark) {
			last = &comments[i]
		}
	}
	if last == nil {
		return nil, nil
	}
	if _, answer, err := hu.findAnswer(ctx, r, last.CreatedAt); err != nil || answer != "" {
		return nil, err // answered: a new question is asked anew
	}
	return last, nil
}

// joinQuestion parks attempt r on the question q of its siblings that waits on the issue: its own question
// (asked) is what ace show says it asked; the answer it waits for is the one after q. A question the comment
// does not show yet (another agent asks something else) is added to it, so that the one answer can answer it.
func (hu *humans) joinQuestion(ctx context.Context, r *store.Run, q *tracker.Comment, shown, asked string) error {
	if !strings.Contains(q.Body, quote(shown)) {
		add := fmt.Sprintf("\n\n**Attempt %d** (%s) asks as well:\n\n%s", r.State.AttemptOf.K, r.Agent, quote(shown))
		body := q.Body + add
		if i := strings.LastIndex(q.Body, "\n\nReply in a comment:"); i >= 0 {
			body = q.Body[:i] + add + q.Body[i:]
		}
		if _, err := hu.tracker.EditComment(ctx, r.Repo, q.ID, body); err != nil {
			return trackerErr(fmt.Errorf("add the question to the attempts' comment: %w", err))
		}
	}
	r.State.Question = asked
	r.State.QuestionAt = q.CreatedAt
	r.State.Questions++
	hu.core.event(ctx, r, EventQuestion, firstLine(asked)+" (the question of another attempt waits on the issue: its answer is this one's too)")
	return nil
}
