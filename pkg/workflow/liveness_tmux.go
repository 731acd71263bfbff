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
// usual look, which o now holds; for a busy or unknown one the look decides that a human is to be asked, which
// the tell_agent step does (askStuck).
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
	if _, ok := stuckState(o.state); !ok {
		t.alive.forget(r.ID)
		return Result{}, false, nil
	}
	return tellAgent(r, tellStuck), true, nil
}

// stuckState is what a human is told the screen of an agent found stuck says: "busy", or "unknown" (nothing ace
// knows); ok is false for a screen ace knows and answers.
func stuckState(s agents.State) (string, bool) {
	switch s {
	case agents.StateBusy:
		return string(agents.StateBusy), true
	case agents.StateStarting:
		return "unknown", true
	}
	return "", false
}

// askStuck is the tell_agent step's part of liveness (tellStuck): a human on the issue is asked about the agent
// whose signs of work the look found flat, with its screen read now. A screen that shows something ace knows
// by now goes back to the look, which answers it; so does a run whose record this process does not hold (ace
// restarted since the look): its wait starts again.
func (t *tmuxRunner) askStuck(ctx context.Context, r *store.Run, prof agents.Profile, screen string) (Result, error) {
	p, ok := t.alive.record(r.ID)
	if !ok {
		return Goto(StepMonitor), nil
	}
	state, ok := stuckState(prof.Classify(screen, false, 0))
	if !ok {
		t.alive.forget(r.ID)
		return Goto(StepMonitor), nil
	}
	return t.alive.toHuman(ctx, r, p, state, screen)
}
