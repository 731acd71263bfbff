package workflow

import (
	"context"
	"fmt"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/store"
)

// limitOnScreen looks for a new limit on a tmux agent's screen (one more than ace has acted on), reported in res,
// and answers the menu a limit opens. ok is false when there is none.
func (t *tmuxRunner) limitOnScreen(ctx context.Context, r *store.Run, prof agents.Profile, o *observed) (Result, bool, error) {
	if o.state == agents.StateBusy {
		return Result{}, false, nil
	}
	menu, err := t.answerLimitMenu(ctx, r, prof, o.screen)
	if err != nil {
		return Result{}, true, err
	}
	l, count, found := prof.LimitOnScreen(o.screen, t.now())
	seen := limitSeen(r)
	if count < seen {
		seen = count // the ones acted on scrolled away
		limitState(r).Seen = count
	}
	if !found || count <= seen {
		if menu {
			return Stay(t.cfg.Monitor.Interval.Duration), true, nil
		}
		return Result{}, false, nil
	}
	return sawLimit(l, count), true, nil // the monitor decides (limits.go)
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
