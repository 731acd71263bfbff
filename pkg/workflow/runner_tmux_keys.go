package workflow

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tmuxops"
)

// Menus ace answers itself (dialogs, permission prompts, limit menus) are answered by meaning: the option is
// found by its words (agents.Menu), the cursor moved there with arrow keys, and Enter pressed only once a fresh
// look shows that option selected; no number key is pressed for them: in some menus they submit at once, in
// others they only move, and an Enter after a number that did not move picks the preselected option. A human's
// answer to a question menu still goes in by number (answerMenu, node_input.go): moving that path here is open.

// OptionMissingError: the menu on screen has no option that means what ace wants (a release reworded it); the
// screen goes to a human, never a guess.
type OptionMissingError struct {
	Want string
	Menu agents.Menu
}

func (e *OptionMissingError) Error() string {
	return fmt.Sprintf("no option means %q in the agent's menu:\n%s", e.Want, e.Menu.Describe())
}

// cursorWait bounds how long a moved cursor may take to show; cursorMoves how often ace moves it before a human
// gets the screen.
const (
	cursorWait  = 2 * time.Second
	cursorMoves = 3
)

// chooseOption answers the menu on screen with the option whose words match want.
func (t *tmuxRunner) chooseOption(ctx context.Context, r *store.Run, screen string, want *regexp.Regexp) error {
	m, ok := agents.ParseMenu(screen)
	if !ok {
		return &OptionMissingError{Want: want.String()}
	}
	i := m.Find(want)
	if i < 0 {
		return &OptionMissingError{Want: want.String(), Menu: m}
	}
	if err := t.moveTo(ctx, r, m, i); err != nil {
		return err
	}
	t.forget(r.ID)
	return t.tmux.SendKeys(ctx, r.Session, "Enter")
}

// moveTo moves the menu's cursor to option i and returns once the screen shows it there.
func (t *tmuxRunner) moveTo(ctx context.Context, r *store.Run, m agents.Menu, i int) error {
	want := m.Options[i].Text
	for moves := 0; m.Selected != i; moves++ {
		if moves == cursorMoves {
			return fmt.Errorf("the cursor did not reach %q after %d moves; the menu shows:\n%s", want, moves, m.Describe())
		}
		if err := t.tmux.SendKeys(ctx, r.Session, m.Moves(i)...); err != nil {
			return err
		}
		var err error
		if m, err = t.waitMenu(ctx, r, func(now agents.Menu) bool { return now.Selected == i }); err != nil {
			return err
		}
		if len(m.Options) <= i || m.Options[i].Text != want {
			return fmt.Errorf("the agent's menu changed while ace moved to %q:\n%s", want, m.Describe())
		}
	}
	return nil
}

// waitMenu looks at the screen until its menu satisfies ok or cursorWait passes, and returns the last menu seen.
func (t *tmuxRunner) waitMenu(ctx context.Context, r *store.Run, ok func(agents.Menu) bool) (agents.Menu, error) {
	var m agents.Menu
	for deadline := time.Now().Add(cursorWait); ; {
		screen, err := t.tmux.Capture(ctx, r.Session, 0)
		if err != nil {
			return m, err
		}
		if now, found := agents.ParseMenu(screen); found {
			m = now
			if ok(m) {
				return m, nil
			}
		}
		if time.Now().After(deadline) {
			return m, nil
		}
		select {
		case <-ctx.Done():
			return m, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// errOptionMissing reports whether err says a menu lacked the option ace wanted.
func errOptionMissing(err error) bool {
	var missing *OptionMissingError
	return errors.As(err, &missing)
}

// typeAnswer puts a human's answer into a tmux session: into the agent's selection menu when one is on screen
// (claude's AskUserQuestion, codex's and gemini's lists, a permission dialog), else into the composer.
func (t *tmuxRunner) typeAnswer(ctx context.Context, r *store.Run, answer string) error {
	prof, err := t.agent.profile(r)
	if err != nil {
		return err
	}
	screen, err := t.tmux.Capture(ctx, r.Session, 0)
	if err != nil {
		return t.type_(ctx, r, answer)
	}
	switch prof.Classify(screen, false, 0) {
	case agents.StateQuestion, agents.StateApproval:
		return t.answerMenu(ctx, r, screen, answer)
	}
	return t.type_(ctx, r, answer)
}

// answerMenu answers a selection menu (read with agents.ParseMenu, like every menu ace answers) with keys, never
// a paste: pasted text is dropped by these menus and the Enter after it picks the preselected option (claude
// 2.1.197 answered "Formal" to a human's "2"). An answer that is an option's number or words selects that option
// (by its number key where it has one: the path that held for the human's answers in CI; by the cursor where it
// has none); any other text goes through the menu's free-text option ("Type something."); a menu without one
// gets the text in the composer, as before.
func (t *tmuxRunner) answerMenu(ctx context.Context, r *store.Run, screen, answer string) error {
	t.forget(r.ID)
	m, ok := agents.ParseMenu(screen)
	if !ok {
		return t.type_(ctx, r, answer)
	}
	free := m.FreeText()
	if i := m.Choose(answer); i >= 0 && i != free {
		return t.pick(ctx, r, screen, m, i)
	}
	if free < 0 {
		return t.type_(ctx, r, answer)
	}
	if err := t.pick(ctx, r, screen, m, free); err != nil {
		return err
	}
	return t.submitFreeText(ctx, r, screen, answer)
}

// pick selects option i of menu m: its number key, or the cursor moved there and Enter.
func (t *tmuxRunner) pick(ctx context.Context, r *store.Run, screen string, m agents.Menu, i int) error {
	if n := m.Options[i].Number; n != "" {
		return t.pickOption(ctx, r, screen, n)
	}
	if err := t.moveTo(ctx, r, m, i); err != nil {
		return err
	}
	return t.tmux.SendKeys(ctx, r.Session, "Enter")
}

// submitFreeText puts answer into the free-text option the cursor is on and submits it: Enter only once the
// words show, and again until the menu is gone — a single Enter sent while claude still draws the words was
// lost in 2 of 5 runs, leaving the answer typed but never sent, and the question asked again.
func (t *tmuxRunner) submitFreeText(ctx context.Context, r *store.Run, screen, answer string) error {
	prof, err := t.agent.profile(r)
	if err != nil {
		return err
	}
	asked, _ := agents.ParseMenu(screen)
	tc := t.cfg.Tmux
	err = t.tmux.Deliver(ctx, r.Session, answer, tmuxops.DeliverOptions{
		Shown:        func(s string) bool { return prof.ShowsPaste(s, answer) },
		PasteTimeout: pasteShowWait,
		// Taken: the menu that asked is gone (the agent works on, or asks something else).
		Submitted: func(_, after string) bool {
			m, ok := agents.ParseMenu(after)
			return !ok || m.Question != asked.Question
		},
		EnterCount:    1, // a second Enter would answer whatever the agent shows next
		EnterDelay:    tc.EnterDelay.Duration,
		SubmitRetries: tc.SubmitRetries,
	})
	t.forget(r.ID)
	if err != nil {
		return fmt.Errorf("answer the agent's menu in free text: %w", err)
	}
	return nil
}

// pickOption presses an option's number, then waits for the screen to settle. Some menus submit on the number
// (gemini's, claude's permission dialogs); a menu that only moves to the option still shows itself, unchanged
// but for the cursor, at the bottom of the screen: it gets Enter. Anything else (the next dialog already up)
// gets nothing: an Enter there would answer it.
func (t *tmuxRunner) pickOption(ctx context.Context, r *store.Run, before, n string) error {
	if err := t.tmux.SendKeys(ctx, r.Session, n); err != nil {
		return err
	}
	last, stable := before, time.Now()
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		screen, err := t.tmux.Capture(ctx, r.Session, 0)
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
		return t.tmux.SendKeys(ctx, r.Session, "Enter")
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

// type_ pastes one line into the agent and submits it.
func (t *tmuxRunner) type_(ctx context.Context, r *store.Run, text string) error {
	prof, err := t.agent.profile(r)
	if err != nil {
		return err
	}
	tc := t.cfg.Tmux
	o := tmuxops.DeliverOptions{
		Ready: func(screen string) bool {
			st := prof.Classify(screen, false, 0)
			return st == agents.StateReady || st == agents.StateQuestion || st == agents.StateApproval
		},
		// Enter only once the paste shows, and again until the screen shows it taken, as for the task's prompt
		// (runner_tmux_deliver.go): a follow-up round dropped by a busy CLI would otherwise be lost without a trace.
		Shown:        func(screen string) bool { return prof.ShowsPaste(screen, text) },
		PasteTimeout: pasteShowWait,
		Submitted:    func(before, after string) bool { return prof.Submitted(before, after, text) },
		// The agent was looked at a moment ago; a short wait covers a turn that is just ending.
		ReadyTimeout:  min(tc.StartupTimeout.Duration, 10*time.Second),
		EnterCount:    enterCount(tc.EnterCount, prof),
		EnterDelay:    tc.EnterDelay.Duration,
		SubmitRetries: tc.SubmitRetries,
	}
	t.forget(r.ID)
	return t.tmux.Deliver(ctx, r.Session, text, o)
}

// pasteShowWait is how long a paste may take to show before it counts as dropped (pasteAttempts).
const pasteShowWait = 5 * time.Second

// enterCount is how many Enters submit a paste into prof's CLI at first: tmux.enter_count, or one where a second
// could submit the text again (Profile.OneEnter).
func enterCount(configured int, prof agents.Profile) int {
	if prof.OneEnter {
		return 1
	}
	return configured
}
