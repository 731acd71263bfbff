package workflow

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/runbox"
	"github.com/aceworks/ace/pkg/store"
)

// tmuxRunner runs the agent's own terminal UI in a tmux session (`ace attach` shows it): the prompt is pasted
// and verified on its screen (runner_tmux_deliver.go), the monitor reads its screen (node_monitor.go), and text goes in
// as a paste or, at a menu, as keys (node_input.go).
type tmuxRunner struct {
	// Busy: a tmux agent's screen tells busy from idle, and Observe reads it; Queue: text typed into a live
	// session needs no keeping; Abandon: a tmux session started by a lost visit is found again by its name
	// (Start re-attaches to it).
	runnerDefaults
	core runHost // the run's events and the engine's rulings (runner.go)
	cfg  *config.Config
	now  clock
	log  *slog.Logger
	root string // ace's root: the panes' transcripts are under it (compaction)
	// issueCheckEvery bounds the quiet wait of a held run (quietWait): the monitor checks the issue that often.
	issueCheckEvery time.Duration

	// The parts it calls: the run's agent (its profile, its variables), the prompts it types, the spending it
	// reads and stops on, the liveness and reach it tells what it sees, the box whose proxy counts the agent's
	// traffic (startFlat).
	agent   *runAgent
	prompts *prompts
	spend   *spending
	alive   *liveness
	reach   *reach
	box     *runbox.Boxes

	// panes are the agents' tmux sessions (runner_panes.go), shared with the live runner; tmux is their client,
	// through which this runner reads its agents' screens and types into them.
	panes *panes
	tmux  Sessions

	mu   sync.Mutex
	seen map[int64]*observed // per-run screen cache: what the monitor saw last (an optimisation, never the truth)
}

func (*tmuxRunner) Name() string { return store.RunnerTmux }

func (*tmuxRunner) Where(r *store.Run) string {
	if r.Session == "" {
		return "no tmux session yet"
	}
	return "tmux session " + r.Session
}

func (*tmuxRunner) Session(r *store.Run) string {
	if r.Session == "" {
		return "-"
	}
	return r.Session
}

func (*tmuxRunner) Watch(r *store.Run) string { return fmt.Sprintf("ace attach %d", r.Issue) }

func (*tmuxRunner) HasScreen() bool { return true }

func (*tmuxRunner) Delivery() string { return "typed into the session" }

func (*tmuxRunner) IdleProcess() bool { return true }

// Start opens the agent's tmux session, or re-attaches to the one a previous ace process left running.
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
	case found:
		// A dead pane from an earlier attempt: start the agent afresh in it.
		if err := t.launch(ctx, r, name, true, false); err != nil {
			return Result{}, err
		}
	default:
		if err := t.launch(ctx, r, name, false, false); err != nil {
			return Result{}, err
		}
	}
	if r.State.PromptDelivered {
		return Goto(StepMonitor), nil
	}
	return Goto(StepDeliver), nil
}

func (t *tmuxRunner) Deliver(ctx context.Context, r *store.Run) (Result, error) {
	return t.deliverPrompt(ctx, r)
}

func (t *tmuxRunner) Observe(ctx context.Context, r *store.Run) (Result, error) {
	t.spend.refreshUsage(ctx, r, false) // usage.go: what the agent spent so far, for ace ls and budgets
	return t.observeScreen(ctx, r)
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
