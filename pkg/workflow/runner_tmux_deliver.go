package workflow

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/sanitize"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tmuxops"
)

// deliverPrompt looks at the agent's screen once and acts: a composer ready for readySettle gets the prompt
// (pasted, submitted, verified); a first-run dialog is answered (see answerDialog); anything else is looked at again
// a moment later. It never
// waits for the agent inside a visit, so an agent that is slow to start holds no worker and delays no other run.
// An agent that is not ready after tmux.startup_timeout, or a dialog still there after its answer, goes to a
// human with the screen: an unknown screen is never a silent stall.
func (t *tmuxRunner) deliverPrompt(ctx context.Context, r *store.Run) (Result, error) {
	if r.State.PromptDelivered {
		return Goto(StepMonitor), nil
	}
	if r.State.DeliverSince.IsZero() {
		r.State.DeliverSince = t.now()
	}
	prof, err := t.agent.profile(r)
	if err != nil {
		return Result{}, err
	}
	pane, found, err := t.panes.pane(ctx, r.Session)
	if err != nil {
		return Result{}, err
	}
	if !found || pane.Dead {
		// The agent died before it was ready: the monitor decides (restart or give up).
		t.core.event(ctx, r, "agent-exited", "the agent exited before it took the prompt")
		return Goto(StepMonitor), nil
	}
	screen, err := t.tmux.Capture(ctx, r.Session, 0)
	if tmuxops.Gone(err) {
		// Gone since the pane list was read (its server killed or crashed): as above.
		t.core.event(ctx, r, "agent-exited", "the agent's session went before it took the prompt")
		return Goto(StepMonitor), nil
	}
	if err != nil {
		return Result{}, fmt.Errorf("read the agent's screen: %w", err)
	}
	poll := deliverPoll(t.cfg.Monitor.Interval.Duration)
	pasted := r.State.PastesLost > 0 || !r.State.PastedAt.IsZero()
	if pasted {
		if how, ok := t.promptTaken(r, prof, screen); ok {
			// ace pasted the prompt, then was killed before it saved that it was delivered: the agent has it.
			return t.delivered(ctx, r, t.prompts.promptText(r), "the agent had taken the prompt before ace restarted ("+how+")"), nil
		}
	}
	if pasted && prof.ShowsPaste(screen, t.prompts.promptText(r)) {
		// The paste ace took for lost was only slow to show (claude on a loaded machine), or ace was killed
		// before its Enter: submit it.
		return t.submitPrompt(ctx, r, prof, true)
	}
	state := prof.Classify(screen, false, 0)
	if state != agents.StateDialog {
		clearDialog(r) // the dialog ace was answering is gone: a later one starts afresh
	}
	switch settled := t.readyFor(r.ID, state == agents.StateReady); {
	case settled && r.State.PastedAt.IsZero():
		// The intent to paste is saved first (the next visit pastes): see PastedAt.
		r.State.PastedAt = t.now()
		t.setPasteIntent(r.ID, true)
		return Stay(0), nil
	case settled && !t.setPasteIntent(r.ID, false) && t.now.since(r.State.PastedAt) < pasteShowWait:
		// An intent this process did not save: an ace before it may have pasted, and the agent may still show
		// that paste (then it is submitted above). Pasted again now, the prompt would reach the agent twice.
		return Stay(poll), nil
	case settled:
		return t.submitPrompt(ctx, r, prof, false)
	case state == agents.StateReady:
		return Stay(poll), nil // ready only a moment ago: a dialog may still come up over the composer
	}
	switch state {
	case agents.StateDialog:
		return t.answerDialog(ctx, r, prof, screen, poll)
	case agents.StateQuestion, agents.StateApproval:
		if res, ok := t.autoApprove(ctx, r, prof, screen, poll); ok {
			return res, nil
		}
		return askFor("Before it took its task, the agent asks on its screen:", screen), nil
	}
	// The wait is bounded by the time the agent shows no sign of starting (runner_tmux_start.go).
	timeout := t.cfg.Tmux.StartupTimeout.Duration
	if t.startFlat(r, pane, screen) > timeout {
		msg := fmt.Sprintf("The agent did not show its prompt, and for %s (tmux.startup_timeout) nothing of it moved: "+
			"not its processes' CPU, not its screen. ace does not know the screen it shows. Answer with the keys or "+
			"text that pass it.", timeout)
		// A human's answer starts the wait afresh.
		return askFor(msg, screen).then(func() { r.State.DeliverSince = time.Time{} }), nil
	}
	return Stay(poll), nil
}

// submitPrompt pastes the task (or the resume prompt) into a ready composer — or takes the one already there
// (pasted) — and makes sure it was submitted.
func (t *tmuxRunner) submitPrompt(ctx context.Context, r *store.Run, prof agents.Profile, pasted bool) (Result, error) {
	text := t.prompts.promptText(r)
	tc := t.cfg.Tmux
	err := t.tmux.Deliver(ctx, r.Session, text, tmuxops.DeliverOptions{
		Ready:         prof.IsReady,
		Submitted:     func(before, after string) bool { return prof.Submitted(before, after, text) },
		Shown:         func(screen string) bool { return prof.ShowsPaste(screen, text) },
		Pasted:        pasted,
		PasteTimeout:  pasteShowWait,
		ReadyTimeout:  max(2*tc.EnterDelay.Duration, deliverPoll(t.cfg.Monitor.Interval.Duration)), // ready a moment ago
		EnterCount:    enterCount(tc.EnterCount, prof),
		EnterDelay:    tc.EnterDelay.Duration,
		SubmitRetries: tc.SubmitRetries,
	})
	var lost *tmuxops.PasteNotShownError
	if errors.As(err, &lost) {
		return t.pasteLost(ctx, r, lost.Screen)
	}
	if err != nil {
		if pane, found, perr := t.panes.pane(ctx, r.Session); perr == nil && (!found || pane.Dead) {
			t.core.event(ctx, r, "agent-exited", "the agent exited before it took the prompt")
			return Goto(StepMonitor), nil
		}
		return Result{}, fmt.Errorf("deliver the prompt: %w", err)
	}
	return t.delivered(ctx, r, text, "prompt delivered"), nil
}

// delivered records that the agent has its prompt, text, and hands the run to the monitor.
func (t *tmuxRunner) delivered(ctx context.Context, r *store.Run, text, msg string) Result {
	r.State.PromptHead = promptHead(text)
	r.State.PromptDelivered = true
	r.State.PastesLost, r.State.PromptResent = 0, 0
	r.State.PastedAt = time.Time{}
	r.State.Resume = false
	r.State.DeliverSince = time.Time{}
	clearDialog(r)
	r.State.MonitorSince = t.now()
	t.markTranscript(r)
	t.core.event(ctx, r, "prompt", msg)
	return Goto(StepMonitor)
}

// promptHeadMax bounds what the run keeps of a delivered prompt (PromptHead): Profile.PromptUnsent looks for its
// first words only, and a resume prompt may be a human's whole answer.
const promptHeadMax = 64

// promptHead is the beginning of prompt, trimmed, cut at a character within promptHeadMax bytes.
func promptHead(prompt string) string { return sanitize.Cut(strings.TrimSpace(prompt), promptHeadMax) }

// promptTaken reports whether an agent ace pasted the prompt into took it: it wrote .ace/DONE or .ace/QUESTION,
// or it is working (what it draws last says so). An agent that shows its composer is given the prompt (again).
func (t *tmuxRunner) promptTaken(r *store.Run, prof agents.Profile, screen string) (string, bool) {
	for _, f := range []string{doneFile, questionFile} {
		if workCopy(r).Exists(f) {
			return "it wrote " + f, true
		}
	}
	if prof.Classify(screen, false, 0) == agents.StateBusy {
		return "it is working", true
	}
	return "", false
}

// pasteLost: the agent did not show the pasted prompt within pasteShowWait, and no Enter was pressed. Claude 2.1
// on a loaded machine takes seconds to draw a paste that arrives as it finishes starting, and an Enter sent
// meanwhile became a newline in an empty composer while the text was lost (seen in the full suite on 2 cores).
// A paste that shows up later is submitted then (see deliverPrompt); one that never does is pasted again once
// the composer is ready; after pasteAttempts a human is asked, with the screen.
func (t *tmuxRunner) pasteLost(ctx context.Context, r *store.Run, screen string) (Result, error) {
	r.State.PastesLost++
	t.forget(r.ID)
	if r.State.PastesLost >= pasteAttempts {
		msg := fmt.Sprintf("ace pasted the task prompt %d times, but the agent never showed it. Answer with the keys "+
			"or text that make its composer take input.", r.State.PastesLost)
		r.State.PastesLost = 0
		return askFor(msg, screen), nil
	}
	t.core.event(ctx, r, "prompt", fmt.Sprintf("the agent did not show the pasted prompt (%d/%d); pasting it again once "+
		"its composer is ready", r.State.PastesLost, pasteAttempts))
	return Stay(deliverPoll(t.cfg.Monitor.Interval.Duration)), nil
}

// answerDialog answers a dialog the agent shows (trust, sign-in, API key, model notice). A dialog is answered
// only once it has been on screen for dialogSettle: keys sent while it draws are lost (codex 0.169's API-key
// screen ignores an Enter sent 0.3 s after it appears, and then stays). Still there dialogRetry after an answer,
// it is answered again, at most dialogAnswers times: spaced, never a key per look (pressing again and again
// stalls codex). Still there after that, it goes to a human with the screen.
func (t *tmuxRunner) answerDialog(ctx context.Context, r *store.Run, prof agents.Profile, screen string, poll time.Duration) (Result, error) {
	d, res, due := t.dialogDue(r, prof, screen, poll)
	if !due {
		return res, nil
	}
	return t.dialogAnswer(ctx, r, d, screen, Stay(poll))
}

// dialogAnswer answers dialog d on screen and counts the answer; then the run goes on as after says.
func (t *tmuxRunner) dialogAnswer(ctx context.Context, r *store.Run, d agents.Dialog, screen string, after Result) (Result, error) {
	name, st := d.Name, &r.State
	if err := t.answerDialogOnce(ctx, r, d, screen); errOptionMissing(err) {
		msg := fmt.Sprintf("The agent shows its %s dialog, but ace found none of its options that means what it "+
			"wants (%s). Answer with the keys or text that pass it.", name, d.Choose)
		return askFor(msg, screen).then(func() { clearDialog(r) }), nil
	} else if err != nil {
		return Result{}, fmt.Errorf("answer the %s dialog: %w", name, err)
	}
	st.DialogScreen, st.DialogAt = screenDigest(screen), t.now()
	st.DialogAnswers++
	how := "answered the agent's " + name + " dialog"
	if st.DialogAnswers > 1 {
		how += fmt.Sprintf(" again (%d/%d): it was still there after %s", st.DialogAnswers, dialogAnswers, dialogRetry)
	}
	t.core.event(ctx, r, "dialog", how)
	t.forget(r.ID)
	return after, nil
}

// answerDialogOnce answers dialog d on screen: its option by meaning, or its keys where it has no options.
func (t *tmuxRunner) answerDialogOnce(ctx context.Context, r *store.Run, d agents.Dialog, screen string) error {
	if d.Choose != nil {
		return t.chooseOption(ctx, r, screen, d.Choose)
	}
	return t.tmux.SendKeys(ctx, r.Session, d.Keys...)
}

// autoApprove answers a permission dialog with the profile's "allow once" option when auto_approve is set.
func (t *tmuxRunner) autoApprove(ctx context.Context, r *store.Run, prof agents.Profile, screen string, poll time.Duration) (Result, bool) {
	if prof.Classify(screen, false, 0) != agents.StateApproval || !prof.AutoApprove || prof.Approve == nil {
		return Result{}, false
	}
	if err := t.chooseOption(ctx, r, screen, prof.Approve); err != nil {
		return Result{}, false
	}
	t.core.event(ctx, r, "approved", "answered a permission dialog (auto_approve)")
	t.forget(r.ID)
	return Stay(poll), true
}

func clearDialog(r *store.Run) {
	r.State.Dialog, r.State.DialogScreen, r.State.DialogAt, r.State.DialogAnswers = "", "", time.Time{}, 0
}

// screenDigest names a screen without keeping it in the store, and without what moves on it by itself
// (screenPrint: clocks, spinners), so that a dialog redrawn as it was is the same screen.
func screenDigest(screen string) string {
	return strconv.FormatUint(screenPrint(screen), 16)
}

// A dialog is answered once it has been on screen dialogSettle, again after dialogRetry when it stays, at most
// dialogAnswers times; then a human is asked. Long enough for a CLI that saves a setting or restarts, short
// enough that a wrong answer is not a long stall (about 10 s in all).
const (
	dialogSettle  = time.Second
	dialogRetry   = 4 * time.Second
	dialogAnswers = 3
	// pasteAttempts bounds the pastes an agent may drop before a human is asked.
	pasteAttempts = 3
)

// deliverPoll is how soon a starting agent is looked at again.
func deliverPoll(interval time.Duration) time.Duration {
	return min(max(interval/2, 100*time.Millisecond), 500*time.Millisecond)
}
