package workflow

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tmuxops"
	"github.com/aceworks/ace/pkg/transcript"
)

// Observe is the monitor's look at a tmux run: what the agent spent so far, then its screen.
func (t *tmuxRunner) Observe(ctx context.Context, r *store.Run) (Result, error) {
	t.spend.refreshUsage(ctx, r, false) // usage.go: what the agent spent so far, for ace ls and budgets
	return t.observeScreen(ctx, r)
}

// observeScreen is the tmux runner's look at its agent: the pane gone or dead, a usage limit, a dialog, a
// question or an approval on screen, an idle composer (nudge, compaction) — each decided from the screen now.
func (t *tmuxRunner) observeScreen(ctx context.Context, r *store.Run) (Result, error) {
	m := t.cfg.Monitor
	pane, found, err := t.panes.pane(ctx, r.Session)
	if err != nil {
		return Result{}, err
	}
	if !found || pane.Dead {
		return tellAgent(r, tellExited), nil // tell_agent rules on what it left (onAgentExit)
	}
	prof, err := t.agent.profile(r)
	if err != nil {
		return Result{}, err
	}
	visit := t.now()
	o, err := t.look(ctx, r, prof, pane)
	if err == nil && awaitsKeys(o.state) && o.capturedAt.Before(visit) {
		// What ace answers, it answers on a screen read now: the cache may be settle old, and the agent may have
		// moved on (claude 2.1.332 replaced its dialog by a permission prompt, "No" preselected, and an Enter
		// meant for the dialog, sent on the cached screen, said No and interrupted the agent's turn).
		cached := o.screen
		if o, err = t.capture(ctx, r, prof, pane, o); err == nil && o.screen != cached {
			// Looked at afresh on the next visit, from the top: at once, not when the pane watch next sees a change.
			t.revisitAt(r.ID, t.now())
			return Stay(m.Interval.Duration), nil
		}
	}
	if tmuxops.Gone(err) {
		return tellAgent(r, tellGone), nil // gone since the pane list was read (its server killed or crashed)
	}
	if err != nil {
		return Result{}, err
	}
	if o.state != agents.StateDialog {
		// The dialog ace answered is gone: the same one shown again later (claude's auto-mode check in a later
		// turn) is a new one, to settle before its answer and with its own answers, not a retry of the old.
		clearDialog(r)
	}
	if res, ok := t.limitOnScreen(r, prof, o); ok {
		return res, nil
	}
	if res, ok, err := t.retryOnScreen(ctx, r, prof, o, pane.Activity); ok || err != nil { // the model unreachable: reach_runners.go
		return res, err
	}
	if t.core.timedOut(r, o.screen) {
		return Goto(StepFailed), nil
	}
	if o.state == agents.StateStarting && r.State.PromptResent < pasteAttempts && prof.PromptUnsent(o.screen, r.State.PromptHead) {
		// The prompt ace delivered sits in the composer, unsent: Enter again once the screen settled, before the
		// stuck check asks a human about an agent that never had its task.
		if still := latest(o.changedAt, pane.Activity).Add(m.Settle.Duration); t.now().Before(still) {
			t.revisitAt(r.ID, still)
			return Stay(m.Interval.Duration), nil
		}
		return tellAgent(r, tellSubmit), nil
	}
	if o.state == agents.StateBusy || o.state == agents.StateStarting {
		res, stuck, err := t.stuck(ctx, r, prof, pane, o) // liveness.go: working, or nothing ace knows
		if stuck || err != nil {
			return res, err
		}
	} else {
		t.alive.forget(r.ID)
	}
	answered := latest(r.State.MonitorSince, r.State.ApprovedAt)
	if since := t.now.since(answered); (o.state == agents.StateApproval || o.state == agents.StateQuestion) && since < answerSettle {
		// Just answered (or just delivered): the agent may still show the menu it is leaving — an Enter sent
		// again there answers whatever it draws next.
		t.revisitAt(r.ID, answered.Add(answerSettle))
		return Stay(m.Interval.Duration), nil
	}
	switch o.state {
	case agents.StateApproval:
		if prof.AutoApprove && prof.Approve != nil {
			return tellAgent(r, tellApprove), nil // tell_agent allows it once (runner_tmux_tell.go)
		}
		return askFor("The agent asks for permission:", o.screen), nil
	case agents.StateQuestion:
		return askFor("The agent asks a question on its screen:", o.screen), nil
	case agents.StateDialog:
		if _, res, due := t.dialogDue(r, prof, o.screen, m.Interval.Duration); !due {
			return res, nil
		}
		return tellAgent(r, tellDialog), nil // tell_agent answers it (runner_tmux_tell.go)
	case agents.StateReady:
		if t.compactDue(r, prof, o.state) {
			return tellAgent(r, tellCompact), nil
		}
		idle := t.now().Sub(latest(o.changedAt, pane.Activity))
		if prof.TurnStopped(o.screen) {
			// The CLI stopped the turn itself and says a message goes on: waiting idle_after would only stall.
			if idle >= m.Settle.Duration {
				return tellAgent(r, tellStopped), nil
			}
			t.revisitAt(r.ID, latest(o.changedAt, pane.Activity).Add(m.Settle.Duration))
		}
		if idle >= m.IdleAfter.Duration && t.now.since(r.State.NudgedAt) >= m.IdleAfter.Duration {
			return tellAgent(r, tellIdle), nil // the tell_agent step nudges it, or asks a human (onIdle)
		}
	}
	return Stay(m.Interval.Duration), nil
}

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

// dialogDue decides on the dialog on screen (answerDialog): due when it is to be answered now; else res says
// what instead (looked at again after poll, a human asked).
func (t *tmuxRunner) dialogDue(r *store.Run, prof agents.Profile, screen string, poll time.Duration) (agents.Dialog, Result, bool) {
	d, ok := prof.DialogOn(screen)
	if !ok {
		return d, Stay(poll), false
	}
	name := d.Name
	st := &r.State
	if st.Dialog != name || st.DialogAnswers > 0 && st.DialogScreen != screenDigest(screen) {
		// A new dialog, or the one answered shown again on a screen that changed since the answer: the agent
		// took the answer and went on (claude's auto-mode check comes back for a later action). Either is
		// answered after it settled, with answers of its own; only a screen that stayed as it was is a retry.
		st.Dialog, st.DialogScreen, st.DialogAt, st.DialogAnswers = name, "", t.now(), 0
		t.revisitAt(r.ID, st.DialogAt.Add(dialogSettle))
		return d, Stay(poll), false
	}
	wait := dialogRetry
	if st.DialogAnswers == 0 {
		wait = dialogSettle
	}
	if t.now.since(st.DialogAt) < wait {
		t.revisitAt(r.ID, st.DialogAt.Add(wait))
		return d, Stay(poll), false
	}
	if st.DialogAnswers >= dialogAnswers {
		msg := fmt.Sprintf("ace answered the agent's %s dialog %d times, but it is still there. Answer with the keys "+
			"or text that pass it.", name, st.DialogAnswers)
		return d, askFor(msg, screen).then(func() { clearDialog(r) }), false
	}
	return d, Result{}, true
}

// dialogStill reports whether screen still shows the dialog dialogDue found due (same name, and for a retry the
// screen answered before): the dialog a later step answers.
func dialogStill(r *store.Run, prof agents.Profile, screen string) (agents.Dialog, bool) {
	d, ok := prof.DialogOn(screen)
	st := &r.State
	if !ok || d.Name != st.Dialog || st.DialogAnswers > 0 && st.DialogScreen != screenDigest(screen) {
		return d, false
	}
	return d, true
}

// awaitsKeys reports whether an agent in state s waits for something ace may answer with keys: a dialog, a
// permission, a question (its menu), a limit menu or an idle composer (a nudge, compaction).
func awaitsKeys(s agents.State) bool {
	return s != agents.StateBusy && s != agents.StateStarting
}

// answerSettle is how long after an answer (or the prompt) a menu on screen is taken for the one answered, not
// a new one: gemini 0.61 still showed the permission dialog just allowed, and it went to the human twice.
const answerSettle = 2 * time.Second

// Compaction: long sessions fill an agent's context. The pane transcript (<root>/logs/<session>.log) grows with
// everything the agent shows, so its growth since the last compaction is a cheap, agent-independent measure of how
// much the context has taken in. The offset lives in the run's state: the count survives a restart of ace. The
// look decides on it here; the tell_agent step types the command (compact, runner_tmux_tell.go).

// compactDue reports whether an idle agent is to compact its context with its own command: its transcript grew
// past monitor.compact_threshold since the last compaction. The monitor decides it; the tell_agent step types the
// command (compact).
func (t *tmuxRunner) compactDue(r *store.Run, prof agents.Profile, st agents.State) bool {
	threshold := t.cfg.Monitor.CompactThreshold
	if threshold <= 0 || prof.CompactCommand == "" || st != agents.StateReady {
		return false
	}
	size, err := t.transcriptSize(r)
	if err != nil {
		return false
	}
	if !r.State.HasCompactAt || r.State.Compacting {
		// A run from before compaction existed, or the agent is back at its prompt after compacting: count from
		// here, so that what the compaction itself printed never calls for another one.
		r.State.CompactAt, r.State.HasCompactAt = size, true
		r.State.Compacting = false
		return false
	}
	return agents.CompactDue(size, r.State.CompactAt, threshold, st)
}

// markTranscript starts the compaction count at the transcript's current size: a new or restarted agent has an
// empty context, whatever an earlier agent in the same session wrote to the transcript.
func (t *tmuxRunner) markTranscript(r *store.Run) {
	r.State.Compacting = false
	if size, err := t.transcriptSize(r); err == nil {
		r.State.CompactAt, r.State.HasCompactAt = size, true
	}
}

func (t *tmuxRunner) transcriptSize(r *store.Run) (int64, error) {
	return fileSize(transcript.TerminalLog(t.root, r.Session))
}

// fileSize is the size of the file at path; 0 when there is none (yet).
func fileSize(path string) (int64, error) {
	if path == "" {
		return 0, nil
	}
	fi, err := os.Stat(path)
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}
