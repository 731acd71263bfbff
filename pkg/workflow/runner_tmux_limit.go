package workflow

import (
	"context"
	"fmt"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/store"
)

// limitOnScreen looks for a new limit on a tmux agent's screen (one more than ace has acted on), reported in res;
// a menu the limit opened is answered first, by the tell_agent step (tellLimitMenu). ok is false when there is none.
func (t *tmuxRunner) limitOnScreen(r *store.Run, prof agents.Profile, o *observed) (Result, bool) {
	if o.state == agents.StateBusy {
		return Result{}, false
	}
	if _, menu := prof.LimitMenu(o.screen); menu {
		return tellAgent(r, tellLimitMenu), true
	}
	return t.newLimit(r, prof, o.screen)
}

// newLimit reports a limit on screen that ace has not acted on yet (the monitor decides: limits.go).
func (t *tmuxRunner) newLimit(r *store.Run, prof agents.Profile, screen string) (Result, bool) {
	l, count, found := prof.LimitOnScreen(screen, t.now())
	seen := limitSeen(r)
	if count < seen {
		seen = count // the ones acted on scrolled away
		limitState(r).Seen = count
	}
	if !found || count <= seen {
		return Result{}, false
	}
	return sawLimit(l, count), true
}

// answerLimitMenu answers the menu a limit opened on screen, if one is there, with the option that keeps the
// user's choice (codex's preselected option would switch the model).
func (t *tmuxRunner) answerLimitMenu(ctx context.Context, r *store.Run, prof agents.Profile, screen string) (bool, error) {
	d, found := prof.LimitMenu(screen)
	if !found {
		return false, nil
	}
	if err := t.chooseOption(ctx, r, screen, d.Choose); err != nil {
		return false, fmt.Errorf("answer the limit menu: %w", err)
	}
	t.core.event(ctx, r, EventLimit, fmt.Sprintf("answered the usage-limit menu with %q (keeps the user's choice)", d.Choose))
	return true, nil
}
