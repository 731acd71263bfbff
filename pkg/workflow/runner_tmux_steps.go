package workflow

import (
	"context"
	"fmt"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/store"
)

// The tmux runner's steps: what the graph's nodes call (Runner). They sit above the screen, keys, delivery and
// session files they use; runner_tmux.go holds the runner's parts and describes a run of it. The monitor's look
// (Observe) is with its decisions, in runner_tmux_screen.go.

// Start opens the agent's tmux session, or re-attaches to the one a previous ace process left running; an agent
// the monitor's look found gone is sent here by tell_agent to be started again (onAgentExit).
func (t *tmuxRunner) Start(ctx context.Context, r *store.Run) (Result, error) {
	name, err := t.panes.sessionName(ctx, r)
	if err != nil {
		return Result{}, err
	}
	pane, found, err := t.panes.pane(ctx, name)
	if err != nil {
		return Result{}, err
	}
	switch {
	case found && !pane.Dead:
		r.Session = name
		t.core.event(ctx, r, "session", "re-attached to running session "+name)
	default:
		// A dead pane (an earlier attempt's, or an agent gone while monitored) is started afresh in place; an
		// agent stopped for its slot (released) continues its conversation.
		if err := t.launch(ctx, r, name, found, r.State.Released); err != nil {
			return Result{}, err
		}
		r.State.Released = false
	}
	if r.State.PromptDelivered {
		return Goto(StepMonitor), nil
	}
	return Goto(StepDeliver), nil
}

func (t *tmuxRunner) Deliver(ctx context.Context, r *store.Run) (Result, error) {
	return t.deliverPrompt(ctx, r)
}

func (t *tmuxRunner) Type(ctx context.Context, r *store.Run, text string) error {
	if err := t.typeAnswer(ctx, r, text); err != nil {
		return fmt.Errorf("type into %s: %w", r.Session, err)
	}
	return nil
}

// FollowUp types the round's prompt into the session; an agent gone between rounds is restarted in the same
// working copy, and the resume prompt (deliver_prompt) says what the round is about.
func (t *tmuxRunner) FollowUp(ctx context.Context, r *store.Run, prompt, delivered string) (Result, error) {
	pane, found, err := t.panes.pane(ctx, r.Session)
	if err != nil {
		return Result{}, err
	}
	if r.Session == "" || !found || pane.Dead {
		t.forget(r.ID)
		name, err := t.panes.sessionName(ctx, r)
		if err != nil {
			return Result{}, err
		}
		// A released run's agent continues its conversation: the model sees what it did for the earlier rounds.
		released := r.State.Released
		if err := t.launch(ctx, r, name, found, released); err != nil {
			return Result{}, err
		}
		if released {
			r.State.Released = false
		} else {
			t.core.event(ctx, r, "agent-exited", "the agent was gone between rounds; restarted it in the same working copy")
		}
		r.State.PromptDelivered = false
		r.State.Resume = true
		return Goto(StepDeliver), nil
	}
	if err := t.type_(ctx, r, prompt); err != nil {
		return Result{}, fmt.Errorf("send the follow-up round: %w", err)
	}
	t.markTranscript(r)
	t.core.event(ctx, r, "prompt", delivered)
	return Goto(StepMonitor), nil
}

// Continue types msg unless the agent is already busy again (it resumed by itself); the limit messages in view
// now are the ones the pause was for. A limit menu still open is answered first, with the key that keeps the
// user's choice: claude prints its limit message a moment before it opens "What do you want to do?", so the
// pause may have come before the menu, and a paused run does not look at its screen.
func (t *tmuxRunner) Continue(ctx context.Context, r *store.Run, msg string) error {
	screen, err := t.tmux.Capture(ctx, r.Session, 0)
	if err != nil {
		return fmt.Errorf("capture screen: %w", err)
	}
	prof, err := t.agent.profile(r)
	if err != nil {
		return err
	}
	answered, err := t.answerLimitMenu(ctx, r, prof, screen)
	if err != nil {
		return err
	}
	if answered {
		if screen, err = t.tmux.Capture(ctx, r.Session, 0); err != nil {
			return fmt.Errorf("capture screen: %w", err)
		}
	}
	if prof.Limits().UnsavedUntilReply {
		// gemini drops a refused prompt from its history: the continue alone would reach a model that never saw
		// the task. It says where the task is, as a restart's prompt does.
		msg += ". " + t.prompts.resumePrompt(r)
	}
	if prof.Classify(screen, false, 0) != agents.StateBusy {
		if err := t.type_(ctx, r, msg); err != nil {
			return fmt.Errorf("resume after the usage limit: %w", err)
		}
	}
	_, limitState(r).Seen, _ = prof.LimitOnScreen(screen, t.now())
	return nil
}

// Stop kills the agent's session and everything it started, if it is still there.
func (t *tmuxRunner) Stop(ctx context.Context, r *store.Run) error {
	t.forget(r.ID)
	return t.panes.stop(ctx, r)
}

func (t *tmuxRunner) Working(ctx context.Context, r *store.Run) bool {
	if r.Session == "" {
		return false
	}
	prof, err := t.agent.profile(r)
	if err != nil {
		return false
	}
	screen, err := t.tmux.Capture(ctx, r.Session, 0)
	return err == nil && prof.IsBusy(screen)
}

func (t *tmuxRunner) Live(ctx context.Context, r *store.Run) error { return t.panes.live(ctx, r) }

func (t *tmuxRunner) Screen(ctx context.Context, r *store.Run, historyLines int) (string, error) {
	return t.panes.screen(ctx, r, historyLines)
}

// readUsage: the agent's CLI records what it spent in its session files (usageReader).
func (t *tmuxRunner) readUsage(ctx context.Context, r *store.Run) { t.spend.sessionUsage(ctx, r) }
