package workflow

import (
	"context"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tmuxops"
)

// stuck is the tmux runner's part of liveness (liveness.go), for an agent whose screen says it works or shows
// nothing ace knows (o). While a sign of work moved within stuck_after it returns false, and has the pane watch
// wake the run when the wait would be over. Once every one has been flat that long, the screen is read again: a
// screen ace knows and answers (a dialog, a permission, a question, a ready composer) is left to the monitor's
// usual look, which o now holds; a busy or unknown one goes to a human.
func (t *tmuxRunner) stuck(ctx context.Context, r *store.Run, prof agents.Profile, pane tmuxops.Pane, o *observed) (Result, bool, error) {
	var err error
	p, due := t.alive.look(r, func() vitals {
		if pane.Activity.After(o.capturedAt) {
			// Output since the cached capture: the screen's fingerprint needs the screen as it is.
			if fresh, cerr := t.capture(ctx, r, prof, pane, o); cerr != nil {
				err = cerr
			} else {
				o = fresh
			}
		}
		return vitals{root: pane.PID, withRoot: true, dirs: t.agent.sessionDirs(r, prof), screen: o.screen}
	})
	if err != nil {
		return Result{}, false, err
	}
	if !due {
		t.revisitAt(r.ID, t.alive.deadline(p))
		return Result{}, false, nil
	}
	if _, err := t.capture(ctx, r, prof, pane, o); err != nil { // once more, whatever the cache holds
		return Result{}, false, err
	}
	state := "unknown"
	switch o.state {
	case agents.StateBusy:
		state = string(agents.StateBusy)
	case agents.StateStarting:
	default:
		t.alive.forget(r.ID)
		return Result{}, false, nil
	}
	res, err := t.alive.toHuman(ctx, r, p, state, o.screen)
	return res, true, err
}
