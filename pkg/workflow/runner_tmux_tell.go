package workflow

import (
	"context"
	"fmt"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tmuxops"
)

// The tmux runner's part of the tell_agent step (node_tell.go): what the monitor's look decided to do to its
// agent — keys into a menu, a nudge, a compaction — done in a step of its own, so the look only looks.

// tell acts on the agent as the monitor's look decided (the tell_agent step): it answers the menu the look found
// (a dialog, a permission with auto_approve, a limit's menu), types its compaction command, or it is nudged or
// a human asked (onIdle), or a human asked about it stuck (askStuck); for an agent the look found gone, it rules
// on what it left (onAgentExit). An agent gone
// meanwhile goes back to the look, which decides on it.
func (t *tmuxRunner) tell(ctx context.Context, r *store.Run, what string) (Result, error) {
	pane, found, err := t.panes.pane(ctx, r.Session)
	if err != nil {
		return Result{}, err
	}
	switch gone := !found || pane.Dead; {
	case what == tellGone:
		return t.onAgentExit(ctx, r, pane, false) // its session went after the pane list the look read
	case what == tellExited && gone:
		return t.onAgentExit(ctx, r, pane, found)
	case gone || what == tellExited:
		return Goto(StepMonitor), nil // gone meanwhile: the look decides on it (or it is there: looked at again)
	}
	switch what {
	case tellDialog, tellApprove, tellLimitMenu, tellSubmit:
		return t.tellKeys(ctx, r, what)
	case tellStuck:
		prof, screen, gone, err := t.screenNow(ctx, r)
		if err != nil {
			return Result{}, err
		}
		if gone {
			return Goto(StepMonitor), nil // the look finds it gone and decides
		}
		return t.askStuck(ctx, r, prof, screen) // liveness_tmux.go
	case tellIdle, tellStopped:
		screen, err := t.tmux.Capture(ctx, r.Session, 0)
		if err != nil {
			return Result{}, fmt.Errorf("capture screen: %w", err)
		}
		how := "nudged the idle agent"
		if what == tellStopped {
			how = "continued the agent's turn, which its CLI had stopped"
		}
		return t.onIdle(ctx, r, screen, how)
	}
	prof, err := t.agent.profile(r)
	if err != nil {
		return Result{}, err
	}
	t.compact(ctx, r, prof)
	return Result{Next: StepMonitor, Wait: t.cfg.Monitor.Interval.Duration}, nil
}

// tellKeys answers the menu the look found, on a screen read now: keys go only where the agent still shows
// that menu. A screen that moved on since the look goes back to it at once, to be looked at afresh (claude
// 2.1.332 replaced a dialog by a permission prompt, "No" preselected: an Enter meant for the dialog said No).
func (t *tmuxRunner) tellKeys(ctx context.Context, r *store.Run, what string) (Result, error) {
	prof, screen, gone, err := t.screenNow(ctx, r)
	if err != nil {
		return Result{}, err
	}
	if gone {
		return Goto(StepMonitor), nil // the look finds it gone and decides
	}
	after := Result{Next: StepMonitor, Wait: t.cfg.Monitor.Interval.Duration}
	state := prof.Classify(screen, false, 0)
	switch what {
	case tellDialog:
		if d, ok := dialogStill(r, prof, screen); ok && state == agents.StateDialog {
			return t.dialogAnswer(ctx, r, d, screen, after)
		}
	case tellApprove:
		if state == agents.StateApproval && prof.AutoApprove && prof.Approve != nil {
			return t.approve(ctx, r, screen, after)
		}
	case tellSubmit:
		if prof.PromptUnsent(screen, r.State.PromptHead) {
			if err := t.tmux.SendKeys(ctx, r.Session, "Enter"); err != nil {
				return Result{}, err
			}
			r.State.PromptResent++
			t.forget(r.ID)
			t.core.event(ctx, r, "prompt", fmt.Sprintf("the prompt sat unsent in the agent's composer: Enter again (%d/%d)",
				r.State.PromptResent, pasteAttempts))
			return after, nil
		}
	case tellLimitMenu:
		if state != agents.StateBusy {
			if _, ok := prof.LimitMenu(screen); ok {
				if _, err := t.answerLimitMenu(ctx, r, prof, screen); err != nil {
					return Result{}, err
				}
				if res, ok := t.newLimit(r, prof, screen); ok {
					return res, nil // the limit that opened the menu: the monitor's decision (Engine.reported)
				}
				return after, nil
			}
		}
	}
	return Goto(StepMonitor), nil
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

// approve allows the permission on screen once (auto_approve); a menu without such an option goes to a human.
func (t *tmuxRunner) approve(ctx context.Context, r *store.Run, screen string, after Result) (Result, error) {
	prof, err := t.agent.profile(r)
	if err != nil {
		return Result{}, err
	}
	err = t.chooseOption(ctx, r, screen, prof.Approve)
	if errOptionMissing(err) {
		return askFor("The agent asks for permission, and ace (auto_approve) found no option that allows it once:",
			screen), nil
	}
	if err != nil {
		return Result{}, fmt.Errorf("approve: %w", err)
	}
	r.State.ApprovedAt = t.now()
	t.core.event(ctx, r, "approved", "answered a permission dialog (auto_approve)")
	return after, nil
}

// onIdle is the tell_agent step's part for an agent that sits at its prompt without having finished: at its
// budget, or after max_nudges nudges, a human is asked to look; else it is nudged (how says why).
func (t *tmuxRunner) onIdle(ctx context.Context, r *store.Run, screen, how string) (Result, error) {
	m := t.cfg.Monitor
	if res, ok, err := t.spend.budgetStop(ctx, r, screen); ok {
		return res, err
	}
	if r.Nudges >= m.MaxNudges {
		msg := fmt.Sprintf("The agent has been idle for %s after %d nudges without finishing. Its screen:", m.IdleAfter.Duration, r.Nudges)
		return askFor(msg, screen), nil
	}
	if err := t.type_(ctx, r, t.prompts.nudgePrompt()); err != nil {
		return Result{}, fmt.Errorf("nudge: %w", err)
	}
	r.Nudges++
	r.State.NudgedAt = t.now()
	t.core.event(ctx, r, "nudge", fmt.Sprintf("%s (%d/%d)", how, r.Nudges, m.MaxNudges))
	return Result{Next: StepMonitor, Wait: m.Interval.Duration}, nil
}

// onAgentExit handles a dead pane (or a vanished session): keep what the agent committed, else have the start step
// restart it — a bounded number of times when it ended by itself (restart_cause.go) — else give up with its last
// screen.
func (t *tmuxRunner) onAgentExit(ctx context.Context, r *store.Run, pane tmuxops.Pane, found bool) (Result, error) {
	screen := ""
	if found {
		screen, _ = t.tmux.Capture(ctx, r.Session, 0)
	}
	worked, err := t.core.leftWork(ctx, r)
	if err != nil {
		return Result{}, err
	}
	c := t.exitCause(ctx, r, pane, found)
	if worked {
		t.core.event(ctx, r, "agent-exited", c.how+"; finalizing what it did")
		return Goto(StepFinalize), nil
	}
	if t.core.mayRestart(r, c) {
		// The look decides; the start step starts the agent again (Start), in a visit of its own and stored at
		// start_session, so an ace that stops in between starts it on its next visit.
		t.core.restarted(ctx, r, c, "restarting it")
		t.forget(r.ID)
		r.State.PromptDelivered, r.State.Resume = false, true
		return Goto(StepStartSession), nil
	}
	r.Error = fmt.Sprintf("%s %d times without making changes", c.how, r.Restarts+1)
	r.State.LastScreen = screen
	return Goto(StepFailed), nil
}

// exitCause reads why the agent is gone (paneCause).
func (t *tmuxRunner) exitCause(ctx context.Context, r *store.Run, pane tmuxops.Pane, found bool) exitCause {
	return paneCause("the agent", pane, found, func() string { return t.panes.sessionGone(ctx, r) })
}

// compact types the agent's compaction command (the tell_agent step, after compactDue). A failure is logged and
// not fatal: the next idle moment tries again.
func (t *tmuxRunner) compact(ctx context.Context, r *store.Run, prof agents.Profile) {
	size, err := t.transcriptSize(r)
	if err != nil {
		return
	}
	offset := r.State.CompactAt
	if err := t.type_(ctx, r, prof.CompactCommand); err != nil {
		t.log.WarnContext(ctx, "compact", "run", r.ID, "session", r.Session, "err", err)
		return
	}
	r.State.CompactAt, r.State.HasCompactAt = size, true
	r.State.Compacting = true
	t.core.event(ctx, r, "compact", fmt.Sprintf("asked the agent to compact its context (%s): its transcript grew %d KiB",
		prof.CompactCommand, agents.Growth(size, offset)>>10))
}

// screenNow is the agent's profile and its screen read now; gone when its session went meanwhile.
func (t *tmuxRunner) screenNow(ctx context.Context, r *store.Run) (prof agents.Profile, screen string, gone bool, err error) {
	if prof, err = t.agent.profile(r); err != nil {
		return prof, "", false, err
	}
	screen, err = t.tmux.Capture(ctx, r.Session, 0)
	if tmuxops.Gone(err) {
		return prof, "", true, nil
	}
	if err != nil {
		return prof, "", false, fmt.Errorf("capture screen: %w", err)
	}
	return prof, screen, false, nil
}
