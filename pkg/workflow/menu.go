package workflow

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/store"
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
func (e *Engine) chooseOption(ctx context.Context, r *store.Run, screen string, want *regexp.Regexp) error {
	m, ok := agents.ParseMenu(screen)
	if !ok {
		return &OptionMissingError{Want: want.String()}
	}
	i := m.Find(want)
	if i < 0 {
		return &OptionMissingError{Want: want.String(), Menu: m}
	}
	if err := e.moveTo(ctx, r, m, i); err != nil {
		return err
	}
	e.forget(r.ID)
	return e.o.Sessions.SendKeys(ctx, r.Session, "Enter")
}

// moveTo moves the menu's cursor to option i and returns once the screen shows it there.
func (e *Engine) moveTo(ctx context.Context, r *store.Run, m agents.Menu, i int) error {
	want := m.Options[i].Text
	for moves := 0; m.Selected != i; moves++ {
		if moves == cursorMoves {
			return fmt.Errorf("the cursor did not reach %q after %d moves; the menu shows:\n%s", want, moves, m.Describe())
		}
		if err := e.o.Sessions.SendKeys(ctx, r.Session, m.Moves(i)...); err != nil {
			return err
		}
		var err error
		if m, err = e.waitMenu(ctx, r, func(now agents.Menu) bool { return now.Selected == i }); err != nil {
			return err
		}
		if len(m.Options) <= i || m.Options[i].Text != want {
			return fmt.Errorf("the agent's menu changed while ace moved to %q:\n%s", want, m.Describe())
		}
	}
	return nil
}

// waitMenu looks at the screen until its menu satisfies ok or cursorWait passes, and returns the last menu seen.
func (e *Engine) waitMenu(ctx context.Context, r *store.Run, ok func(agents.Menu) bool) (agents.Menu, error) {
	var m agents.Menu
	for deadline := time.Now().Add(cursorWait); ; {
		screen, err := e.o.Sessions.Capture(ctx, r.Session, 0)
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

// questionText is what a menu on screen asks, as text for the issue: the lines above its options (the
// question) and the options themselves; "" when the screen shows no menu.
func questionText(screen string) string {
	m, ok := agents.ParseMenu(screen)
	if !ok {
		return ""
	}
	return m.Question + "\n\n" + m.Describe()
}

// errOptionMissing reports whether err says a menu lacked the option ace wanted.
func errOptionMissing(err error) bool {
	var missing *OptionMissingError
	return errors.As(err, &missing)
}
