package workflow

import (
	"context"
	"errors"
	"fmt"

	"github.com/aceworks/ace/pkg/livehost"
	"github.com/aceworks/ace/pkg/runbox"
	"github.com/aceworks/ace/pkg/store"
)

// The live runner's steps: what the graph's nodes call (Runner). They sit above the host, the turns and liveness
// they use; runner_live.go holds the runner's parts, its files, and describes a run of it.

// Start opens the run's tmux session with the live host in it, or re-attaches to the one a previous ace left.
func (l *liveRunner) Start(ctx context.Context, r *store.Run) (Result, error) {
	name, err := l.panes.sessionName(ctx, r)
	if err != nil {
		return Result{}, err
	}
	pane, found, err := l.panes.pane(ctx, name)
	if err != nil {
		return Result{}, err
	}
	if found && !pane.Dead {
		r.Session = name
		l.core.event(ctx, r, "session", "re-attached to the live conversation in "+name)
	} else if err := l.launch(ctx, r, name, found); err != nil {
		return Result{}, err
	}
	if r.State.PromptDelivered {
		return Goto(StepMonitor), nil
	}
	return Goto(StepDeliver), nil
}

// Deliver sends the task (or, after a restart, the resume prompt) once the host answers on its socket. A host
// that does not come up within tmux.startup_timeout goes to a human with its screen; one whose CLI failed the
// protocol's handshake gives the run to the tmux runner.
func (l *liveRunner) Deliver(ctx context.Context, r *store.Run) (Result, error) {
	if r.State.PromptDelivered {
		return Goto(StepMonitor), nil
	}
	if r.State.DeliverSince.IsZero() {
		r.State.DeliverSince = l.now()
	}
	if res, ok, err := l.readTranscript(ctx, r); ok || err != nil {
		return res, err
	}
	poll := deliverPoll(l.cfg.Monitor.Interval.Duration)
	if _, err := l.client(r).Status(ctx); errors.Is(err, livehost.ErrNotRunning) {
		if pane, found, perr := l.panes.pane(ctx, r.Session); perr == nil && (!found || pane.Dead) {
			l.core.event(ctx, r, "agent-exited", "the live host exited before it took the prompt")
			return Goto(StepMonitor), nil // the monitor decides: restart or give up
		}
		if l.now.since(r.State.DeliverSince) < l.cfg.Tmux.StartupTimeout.Duration {
			return Stay(poll), nil
		}
		screen, _ := l.panes.screen(ctx, r, 0)
		return askFor(fmt.Sprintf("The live conversation did not start within %s (tmux.startup_timeout).",
			l.cfg.Tmux.StartupTimeout.Duration), screen), nil
	} else if err != nil {
		return Result{}, err
	}
	if r.State.LivePromptAt.IsZero() {
		// The intent is saved first (the next visit sends): see LivePromptAt.
		r.State.LivePromptAt = l.now()
		return Stay(0), nil
	}
	if err := l.client(r).Send(ctx, l.prompts.promptText(r)); err != nil {
		return Result{}, fmt.Errorf("send the prompt to the live conversation: %w", err)
	}
	return l.delivered(ctx, r, "prompt sent to the live conversation"), nil
}

// Busy: a running turn with nothing waiting for an answer is left alone (its records are read as they come).
func (l *liveRunner) Busy(ctx context.Context, r *store.Run) (Result, bool, error) {
	if res, ok, err := l.readTranscript(ctx, r); ok || err != nil {
		return res, true, err
	}
	st, err := l.client(r).Status(ctx)
	switch {
	case errors.Is(err, livehost.ErrNotRunning):
		return Result{}, false, nil // Observe finds out why the host is gone
	case err != nil:
		// The host is there but did not answer: its turn may still run. Looking again beats taking a .ace/DONE
		// written mid-turn for the end of the work (the turn's usage would be lost).
		l.log.WarnContext(ctx, "the live host's status", "run", r.ID, "err", err)
		return Stay(l.cfg.Monitor.Interval.Duration), true, nil
	case !st.Busy || len(st.Pending) > 0:
		l.alive.forget(r.ID)
		// The turn may have ended between the transcript's read and the status: its end (usage, a limit) is
		// read now, before a .ace/DONE it wrote ends the run (under load the run was finalized without it).
		if res, ok, err := l.readTranscript(ctx, r); ok || err != nil {
			return res, true, err
		}
		return Result{}, false, nil
	}
	if res, stuck, err := l.stuck(ctx, r); stuck || err != nil { // liveness_live.go
		return res, true, err
	}
	return Stay(l.cfg.Monitor.Interval.Duration), true, nil
}

// Type answers what the conversation waits for — a permission (yes or no), a question (an option's number or
// words, or free text) — or else sends text as a user message.
func (l *liveRunner) Type(ctx context.Context, r *store.Run, text string) error {
	c := l.client(r)
	st, err := c.Status(ctx)
	if err != nil {
		return fmt.Errorf("the live conversation: %w", err)
	}
	if len(st.Pending) > 0 {
		p := st.Pending[0]
		if p.Kind == livehost.KindPermission {
			allow, ok := yesNo(text)
			if ok {
				return c.Allow(ctx, p.ID, allow)
			}
			// Not a yes or a no: the permission is refused and the words go to the agent.
			if err := c.Allow(ctx, p.ID, false); err != nil {
				return err
			}
			return c.Send(ctx, text)
		}
		return c.Answer(ctx, p.ID, text)
	}
	return c.Send(ctx, text)
}

// FollowUp sends the round's prompt to the conversation; a host gone between rounds (a released run) is started
// again in the same conversation and told what the round is about (deliver_prompt's resume prompt).
func (l *liveRunner) FollowUp(ctx context.Context, r *store.Run, prompt, delivered string) (Result, error) {
	if _, err := l.client(r).Status(ctx); err == nil {
		if err := l.client(r).Send(ctx, prompt); err != nil {
			return Result{}, fmt.Errorf("send the follow-up round: %w", err)
		}
		l.core.event(ctx, r, "prompt", delivered)
		return Goto(StepMonitor), nil
	}
	if err := l.restart(ctx, r); err != nil {
		return Result{}, err
	}
	r.State.Released = false
	r.State.PromptDelivered, r.State.Resume = false, true
	return Goto(StepDeliver), nil
}

// Continue sends msg after a usage limit.
func (l *liveRunner) Continue(ctx context.Context, r *store.Run, msg string) error {
	if _, err := l.client(r).Status(ctx); err != nil {
		if err := l.restart(ctx, r); err != nil {
			return err
		}
		r.State.PromptDelivered, r.State.Resume = false, true // deliver_prompt says where the task stands
		return nil
	}
	return l.client(r).Send(ctx, msg)
}

// Stop ends the host's session: the host closes the conversation (which the CLI keeps for a resume).
// Stop ends the host's session and everything in it. A host killed outright (a host restart, or SIGKILL after the
// grace) leaves its control socket behind: it goes too, as nothing listens on it until a host starts anew.
func (l *liveRunner) Stop(ctx context.Context, r *store.Run) error {
	if err := l.panes.stop(ctx, r); err != nil {
		return err
	}
	if _, _, sock, _, err := l.liveFiles(r); err == nil {
		removeSocket(sock)
		// Its directory too, where it is outside ace's root; a host started anew makes it again.
		if err := runbox.RemoveSocketDir(l.root, sock); err != nil {
			l.log.WarnContext(ctx, "remove the live host's socket directory", "run", r.ID, "err", err)
		}
	}
	return nil
}

// Live: text can go to the conversation while its host answers.
func (l *liveRunner) Live(ctx context.Context, r *store.Run) error {
	if _, err := l.client(r).Status(ctx); err != nil {
		return fmt.Errorf("%s#%d (no live conversation: %v): %w", r.Repo, r.Issue, err, ErrNoSession)
	}
	return nil
}

// Screen is the host's pane: the conversation as it goes.
func (l *liveRunner) Screen(ctx context.Context, r *store.Run, historyLines int) (string, error) {
	return l.panes.screen(ctx, r, historyLines)
}

func (l *liveRunner) Working(ctx context.Context, r *store.Run) bool {
	st, err := l.client(r).Status(ctx)
	return err == nil && st.Busy
}
