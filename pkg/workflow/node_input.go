package workflow

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tmuxops"
	"github.com/aceworks/ace/pkg/tracker"
)

// askHuman posts the agent's question on the issue, labels it as needing input and parks the run in
// waiting_input. Comments after the question by a trusted user become the answer.
func (e *Engine) askHuman(ctx context.Context, r *store.Run, question, screen string) error {
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
	existing, err := e.o.Tracker.FindComment(ctx, r.Repo, r.Issue, marker)
	if err != nil {
		return trackerErr(fmt.Errorf("find question comment: %w", err))
	}
	if existing == nil {
		if _, err := e.o.Tracker.CreateComment(ctx, r.Repo, r.Issue, body); err != nil {
			return trackerErr(fmt.Errorf("post the question: %w", err))
		}
	}
	if err := e.setLabels(ctx, r, []string{e.cfg.Labels.NeedsInput}); err != nil {
		return trackerErr(err)
	}
	r.State.Question = asked // what ace show and the check read: the menu's question where there is one
	r.State.QuestionAt = e.o.Now()
	r.State.Questions = n
	if err := e.postStatus(ctx, r, statusView{Status: store.StatusWaitingInput, Headline: "waiting for your answer (see the question below)"}); err != nil {
		return trackerErr(err)
	}
	e.event(ctx, r, "question", firstLine(asked))
	return nil
}

// waitingInput relays a trusted human's answer from the issue into the session and resumes monitoring.
func (e *Engine) waitingInput(ctx context.Context, r *store.Run) (Result, error) {
	if next, ok := e.checkIssue(ctx, r); ok {
		return next, nil
	}
	if summary, ok := readProtocolFile(r.Workdir, doneFile); ok {
		// Someone helped the agent directly (ace attach) and it finished.
		r.State.Summary = summary
		return Goto(StepFinalize).With(store.StatusActive), nil
	}
	asked := r.State.QuestionAt
	if asked.IsZero() {
		asked = r.UpdatedAt
	}
	who, answer, err := e.findAnswer(ctx, r, asked)
	if err != nil {
		return Result{}, err
	}
	if answer == "" {
		return Stay(e.cfg.Poll.Interval.Duration), nil
	}
	// The answer goes in exactly as the human wrote it: no prefix, no rewording.
	if err := e.runner(r).Type(ctx, r, answer); err != nil {
		return Result{}, fmt.Errorf("the answer: %w", err)
	}
	next, err := e.recordAnswer(ctx, r, answer)
	if err != nil {
		return Result{}, err
	}
	e.answerEvent(ctx, r, who)
	return next, nil
}

// recordAnswer changes the run for an answer that reached the agent (typed) or is to (queued for its next
// turn): the question is cleared, and for a waiting run next is its way back to work — monitor, or
// deliver_prompt when the answer passed a screen before the task. It types nothing, so it can be redone on a
// fresh run.
func (e *Engine) recordAnswer(ctx context.Context, r *store.Run, answer string) (next Result, err error) {
	e.runner(r).Queue(r, answer)
	if err := os.Remove(filepath.Join(r.Workdir, questionFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return Result{}, fmt.Errorf("clear the question: %w", err)
	}
	if r.Status != store.StatusWaitingInput {
		return Result{}, nil
	}
	if err := e.setLabels(ctx, r, nil, e.cfg.Labels.NeedsInput); err != nil {
		return Result{}, trackerErr(err)
	}
	budgetGranted(r)
	next = Goto(StepMonitor).With(store.StatusActive)
	if !r.State.PromptDelivered {
		next.Next = StepDeliver
	}
	r.Nudges = 0
	r.State.Question = ""
	// Time spent waiting for a human does not count against monitor.timeout.
	r.State.MonitorSince = e.o.Now()
	if err := e.postStatus(ctx, r, statusView{Status: store.StatusActive, Headline: "working (answer received)"}); err != nil {
		return Result{}, trackerErr(err)
	}
	return next, nil
}

// answerEvent records who answered (empty: ace send) and how the answer went in.
func (e *Engine) answerEvent(ctx context.Context, r *store.Run, who string) {
	src := "ace send"
	if who != "" {
		src = "@" + who
	}
	e.event(ctx, r, "answer", "answer from "+src+" "+e.runner(r).Delivery())
}

// findAnswer returns the comments made after the question by trusted humans (never ace itself), joined.
func (e *Engine) findAnswer(ctx context.Context, r *store.Run, asked time.Time) (who, answer string, err error) {
	comments, err := e.o.Tracker.Comments(ctx, r.Repo, r.Issue, asked)
	if err != nil {
		return "", "", trackerErr(fmt.Errorf("read comments: %w", err))
	}
	self, err := e.o.Tracker.Self(ctx)
	if err != nil {
		return "", "", trackerErr(fmt.Errorf("who am I: %w", err))
	}
	var parts []string
	for _, c := range comments {
		if !c.CreatedAt.After(asked) || isAceComment(c.Body) || strings.EqualFold(c.Author, self) {
			continue
		}
		ok, err := e.trustedUser(ctx, r.Repo, c.Author)
		if err != nil {
			return "", "", err
		}
		if !ok {
			e.log.InfoContext(ctx, "ignoring a comment from an untrusted user", "repo", r.Repo, "issue", r.Issue, "user", c.Author)
			continue
		}
		who = c.Author
		parts = append(parts, strings.TrimSpace(c.Body))
	}
	return who, strings.Join(parts, "\n\n"), nil
}

// trustedUser applies the trigger policy to a commenter: allowed_users, else at least min_permission.
func (e *Engine) trustedUser(ctx context.Context, repo, user string) (bool, error) {
	t := e.cfg.Trigger
	if slices.ContainsFunc(t.AllowedUsers, func(u string) bool { return strings.EqualFold(u, user) }) {
		return true, nil
	}
	if strings.HasSuffix(user, "[bot]") {
		return false, nil
	}
	p, err := e.o.Tracker.Permission(ctx, repo, user)
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

// typeAnswer puts a human's answer into a tmux session: into the agent's selection menu when one is on screen
// (claude's AskUserQuestion, codex's and gemini's lists, a permission dialog), else into the composer.
func (e *Engine) typeAnswer(ctx context.Context, r *store.Run, answer string) error {
	prof, err := e.profile(r)
	if err != nil {
		return err
	}
	screen, err := e.o.Sessions.Capture(ctx, r.Session, 0)
	if err != nil {
		return e.type_(ctx, r, answer)
	}
	switch prof.Classify(screen, false, 0) {
	case agents.StateQuestion, agents.StateApproval:
		return e.answerMenu(ctx, r, screen, answer)
	}
	return e.type_(ctx, r, answer)
}

// menuOption is a numbered line of a selection menu: "❯ 1. Formal", "  3. Type something.".
// menuOption is one numbered option: after a cursor, a radio dot or the border of the box the menu is drawn in
// (gemini 0.61 draws its permission dialogs inside one), up to the box's right border.
var menuOption = regexp.MustCompile(`(?m)^[\s│┃❯›>●]*(\d{1,2})\.\s+(\S.*?)[\s│┃]*$`)

// answerMenu answers a selection menu with keys, never a paste: pasted text is dropped by these menus and the
// Enter after it picks the preselected option (claude 2.1.197 answered "Formal" to a human's "2"). An answer
// that is an option's number or label selects that option; any other text goes through the menu's free-text
// option ("Type something."); a menu without one gets the text in the composer, as before.
func (e *Engine) answerMenu(ctx context.Context, r *store.Run, screen, answer string) error {
	e.forget(r.ID)
	options, free := menuOptions(screen)
	want := strings.TrimSpace(answer)
	for n, label := range options {
		if strings.EqualFold(want, label) {
			want = n
		}
	}
	if _, ok := options[want]; ok && want != free {
		return e.pickOption(ctx, r, screen, want)
	}
	if free == "" {
		return e.type_(ctx, r, answer)
	}
	if err := e.pickOption(ctx, r, screen, free); err != nil {
		return err
	}
	return e.submitFreeText(ctx, r, screen, answer)
}

// submitFreeText puts answer into the free-text option the cursor is on and submits it: Enter only once the
// words show, and again until the menu is gone — a single Enter sent while claude still draws the words was
// lost in 2 of 5 runs, leaving the answer typed but never sent, and the question asked again.
func (e *Engine) submitFreeText(ctx context.Context, r *store.Run, screen, answer string) error {
	prof, err := e.profile(r)
	if err != nil {
		return err
	}
	asked, _ := agents.ParseMenu(screen)
	t := e.cfg.Tmux
	err = e.o.Sessions.Deliver(ctx, r.Session, answer, tmuxops.DeliverOptions{
		Shown:        func(s string) bool { return prof.ShowsPaste(s, answer) },
		PasteTimeout: pasteShowWait,
		// Taken: the menu that asked is gone (the agent works on, or asks something else).
		Submitted: func(_, after string) bool {
			m, ok := agents.ParseMenu(after)
			return !ok || m.Question != asked.Question
		},
		EnterCount:    1, // a second Enter would answer whatever the agent shows next
		EnterDelay:    t.EnterDelay.Duration,
		SubmitRetries: t.SubmitRetries,
	})
	e.forget(r.ID)
	if err != nil {
		return fmt.Errorf("answer the agent's menu in free text: %w", err)
	}
	return nil
}

// menuOptions reads a menu's numbered options (number → label), those of the lowest list on screen, and the
// number of its free-text option ("" when it has none).
func menuOptions(screen string) (options map[string]string, free string) {
	options = map[string]string{}
	for _, m := range menuOption.FindAllStringSubmatch(bottomOf(screen), -1) {
		if m[1] == "1" {
			// A list starts again: the menu is the lowest one, not a numbered list in the output above it.
			options, free = map[string]string{}, ""
		}
		options[m[1]] = m[2]
		if strings.HasPrefix(strings.ToLower(m[2]), "type something") {
			free = m[1]
		}
	}
	return options, free
}

// pickOption presses an option's number, then waits for the screen to settle. Some menus submit on the number
// (gemini's, claude's permission dialogs); a menu that only moves to the option still shows itself, unchanged
// but for the cursor, at the bottom of the screen: it gets Enter. Anything else (the next dialog already up)
// gets nothing: an Enter there would answer it.
func (e *Engine) pickOption(ctx context.Context, r *store.Run, before, n string) error {
	if err := e.o.Sessions.SendKeys(ctx, r.Session, n); err != nil {
		return err
	}
	last, stable := before, time.Now()
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		screen, err := e.o.Sessions.Capture(ctx, r.Session, 0)
		if err != nil {
			return err
		}
		if screen != last {
			last, stable = screen, time.Now()
			continue
		}
		if last != before && time.Since(stable) >= 500*time.Millisecond {
			break
		}
	}
	if last == before {
		// Enter now would pick whatever is preselected: leave the menu to the human.
		return fmt.Errorf("the agent's menu did not react to key %s", n)
	}
	if sameMenu(before, last) {
		return e.o.Sessions.SendKeys(ctx, r.Session, "Enter")
	}
	return nil
}

// sameMenu reports whether the bottom of now shows the menu that before showed, the cursor aside.
func sameMenu(before, now string) bool {
	norm := func(s string) string {
		return strings.Join(strings.FieldsFunc(bottomOf(s), func(r rune) bool {
			return r == ' ' || r == '\n' || r == '❯' || r == '›' || r == '>' || r == '●' || r == '○'
		}), " ")
	}
	return norm(before) == norm(now)
}

// bottomOf is the part of a screen where a menu waits: its last 25 lines.
func bottomOf(screen string) string {
	lines := strings.Split(strings.TrimRight(screen, "\n "), "\n")
	if len(lines) > 25 {
		lines = lines[len(lines)-25:]
	}
	return strings.Join(lines, "\n")
}
