package workflow

import (
	"context"
	"fmt"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tmuxops"
	"github.com/aceworks/ace/pkg/untrusted"
)

// recaptureEvery bounds how stale a cached screen may get even when tmux reports no activity.
const recaptureEvery = 30 * time.Second

// observeScreen is the tmux runner's look at its agent: the pane gone or dead, a usage limit, a dialog, a
// question or an approval on screen, an idle composer (nudge, compaction) — each decided from the screen now.
func (t *tmuxRunner) observeScreen(ctx context.Context, r *store.Run) (Result, error) {
	m := t.cfg.Monitor
	pane, found, err := t.panes.pane(ctx, r.Session)
	if err != nil {
		return Result{}, err
	}
	if !found || pane.Dead {
		return t.onAgentExit(ctx, r, pane, found)
	}
	prof, err := t.agent.profile(r)
	if err != nil {
		return Result{}, err
	}
	o, err := t.look(ctx, r, prof, pane)
	if tmuxops.Gone(err) {
		return t.onAgentExit(ctx, r, pane, false) // gone since the pane list was read (its server killed or crashed)
	}
	if err != nil {
		return Result{}, err
	}
	if res, ok, err := t.limitOnScreen(ctx, r, prof, o); ok || err != nil { // limits.go
		return res, err
	}
	if res, ok, err := t.retryOnScreen(ctx, r, prof, o, pane.Activity); ok || err != nil { // the model unreachable: reach_runners.go
		return res, err
	}
	if t.core.timedOut(r, o.screen) {
		return Goto(StepFailed), nil
	}
	if o.state == agents.StateBusy || o.state == agents.StateStarting {
		res, stuck, err := t.stuck(ctx, r, prof, pane, o) // liveness.go: working, or nothing ace knows
		if stuck || err != nil {
			return res, err
		}
	} else {
		t.alive.forget(r.ID)
	}
	if since := t.now.since(r.State.MonitorSince); (o.state == agents.StateApproval || o.state == agents.StateQuestion) && since < answerSettle {
		// Just answered (or just delivered): the agent may still show the menu it is leaving.
		t.revisitAt(r.ID, r.State.MonitorSince.Add(answerSettle))
		return Stay(m.Interval.Duration), nil
	}
	switch o.state {
	case agents.StateApproval:
		if prof.AutoApprove && prof.Approve != nil {
			err := t.chooseOption(ctx, r, o.screen, prof.Approve)
			if err == nil {
				t.core.event(ctx, r, "approved", "answered a permission dialog (auto_approve)")
				return Stay(m.Interval.Duration), nil
			}
			if !errOptionMissing(err) {
				return Result{}, fmt.Errorf("approve: %w", err)
			}
			return askFor("The agent asks for permission, and ace (auto_approve) found no option that allows it once:",
				o.screen), nil
		}
		return askFor("The agent asks for permission:", o.screen), nil
	case agents.StateQuestion:
		return askFor("The agent asks a question on its screen:", o.screen), nil
	case agents.StateDialog:
		return t.answerDialog(ctx, r, prof, o.screen, m.Interval.Duration)
	case agents.StateReady:
		if t.compactIfDue(ctx, r, prof, o.state) {
			return Stay(m.Interval.Duration), nil
		}
		idle := t.now().Sub(latest(o.changedAt, pane.Activity))
		if idle >= m.IdleAfter.Duration && t.now.since(r.State.NudgedAt) >= m.IdleAfter.Duration {
			return t.onIdle(ctx, r, o.screen)
		}
	}
	return Stay(m.Interval.Duration), nil
}

// onIdle nudges an agent that sits at its prompt without having finished, up to max_nudges times; then a human
// is asked to look.
func (t *tmuxRunner) onIdle(ctx context.Context, r *store.Run, screen string) (Result, error) {
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
	t.core.event(ctx, r, "nudge", fmt.Sprintf("nudged the idle agent (%d/%d)", r.Nudges, m.MaxNudges))
	return Stay(m.Interval.Duration), nil
}

// onAgentExit handles a dead pane (or a vanished session): keep what the agent committed, else restart it — a
// bounded number of times when it ended by itself (restart_cause.go) — else give up with its last screen.
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
		t.core.restarted(ctx, r, c, "restarting it")
		t.forget(r.ID)
		name, err := t.panes.sessionName(ctx, r)
		if err != nil {
			return Result{}, err
		}
		// An agent stopped for its slot (released) continues its conversation.
		if err := t.launch(ctx, r, name, found, r.State.Released); err != nil {
			return Result{}, err
		}
		r.State.PromptDelivered, r.State.Resume, r.State.Released = false, true, false
		return Goto(StepDeliver), nil
	}
	r.Error = fmt.Sprintf("%s %d times without making changes", c.how, r.Restarts+1)
	r.State.LastScreen = screen
	return Goto(StepFailed), nil
}

// exitCause reads why the agent is gone (paneCause).
func (t *tmuxRunner) exitCause(ctx context.Context, r *store.Run, pane tmuxops.Pane, found bool) exitCause {
	return paneCause("the agent", pane, found, func() string { return t.panes.sessionGone(ctx, r) })
}

// look returns the session's screen and state, capturing only when needCapture says the screen may tell
// something new: with many sessions, capture-pane is the expensive call.
func (t *tmuxRunner) look(ctx context.Context, r *store.Run, prof agents.Profile, pane tmuxops.Pane) (*observed, error) {
	now := t.now()
	t.mu.Lock()
	o := t.seen[r.ID]
	if o == nil {
		o = &observed{}
		t.seen[r.ID] = o
	}
	need := needCapture(o, pane, now, t.cfg.Monitor.Settle.Duration)
	o.revisit = time.Time{} // this look acts on what it sees, or asks for a revisit anew
	t.mu.Unlock()
	if !need {
		return o, nil
	}
	return t.capture(ctx, r, prof, pane, o)
}

// capture reads the session's screen now into its cached record o.
func (t *tmuxRunner) capture(ctx context.Context, r *store.Run, prof agents.Profile, pane tmuxops.Pane, o *observed) (*observed, error) {
	now := t.now()
	screen, err := t.tmux.Capture(ctx, r.Session, 0)
	if err != nil {
		return nil, fmt.Errorf("capture screen: %w", err)
	}
	state := prof.Classify(screen, pane.Dead, pane.ExitStatus)
	// Under the lock: the pane watch (needsVisit) reads the same record from its own goroutine.
	t.mu.Lock()
	if screen != o.screen || o.capturedAt.IsZero() {
		o.changedAt = now
	}
	o.screen, o.activity, o.capturedAt, o.state = screen, pane.Activity, now, state
	t.mu.Unlock()
	return o, nil
}

// revisitAt has the pane watch wake the run's job at at: the monitor saw a screen it will act on only then (a
// dialog settling before it is answered, a menu just answered), and a screen that stays as it is prints nothing
// that would wake the job earlier than its quiet snooze (claude 2.1.331's auto-mode notice, drawn just after an
// answer, waited 30 s for its answer).
func (t *tmuxRunner) revisitAt(runID int64, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if o := t.seen[runID]; o != nil {
		o.revisit = at
	}
}

// needCapture decides whether the cached screen o may be stale in a way that matters. Output that is still
// flowing means the agent is working: nothing on its screen waits for an answer, so it is read only once the
// output has stopped for settle (a dialog, a question, an idle composer are all still screens). The cached
// screen is also refreshed every recaptureEvery, and always read when tmux reports no activity time at all.
func needCapture(o *observed, pane tmuxops.Pane, now time.Time, settle time.Duration) bool {
	switch {
	case o.capturedAt.IsZero(), pane.Activity.IsZero(), now.Sub(o.capturedAt) >= recaptureEvery:
		return true
	case pane.Activity.Equal(o.activity) && o.capturedAt.Sub(pane.Activity) >= time.Second:
		return false // nothing printed since the last capture
	case pane.Activity.Equal(o.activity):
		// tmux reports activity in whole seconds: output later in the second of the last capture leaves the
		// activity time as it was (a permission dialog drawn just after a capture waited recaptureEvery, 30 s).
		return now.Sub(o.capturedAt) >= settle
	}
	// tmux reports activity in whole seconds, so the output may be up to a second younger than it says.
	return now.Sub(pane.Activity) >= settle+time.Second
}

// readyFor reports whether the run's agent has shown a ready composer, without a break, for readySettle; a look
// that is not ready starts the wait afresh. It is kept with the monitor's cache: losing it costs one wait.
func (t *tmuxRunner) readyFor(runID int64, ready bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	o := t.seen[runID]
	if o == nil {
		o = &observed{}
		t.seen[runID] = o
	}
	now := t.now()
	switch {
	case !ready:
		o.readyAt = time.Time{}
		return false
	case o.readyAt.IsZero():
		o.readyAt = now
	}
	return now.Sub(o.readyAt) >= readySettle
}

// answerSettle is how long after an answer (or the prompt) a menu on screen is taken for the one answered, not
// a new one: gemini 0.61 still showed the permission dialog just allowed, and it went to the human twice.
const answerSettle = 2 * time.Second

// readySettle is how long a starting agent's composer must stay ready before the prompt goes in: gemini 0.61
// draws its composer about 0.3 s before its trust dialog, which then took the pasted prompt's Enter as its
// answer and restarted, losing the prompt (seen end to end in realcli_e2e_test.go).
const readySettle = time.Second

func (t *tmuxRunner) forget(runID int64) {
	t.mu.Lock()
	delete(t.seen, runID)
	t.mu.Unlock()
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// quietWait is how long the job of a monitored tmux run sleeps when nothing calls for it sooner: the pane watch
// wakes it at once when its agent changes. Bounded by what the monitor does on a timer: the idle nudge (within
// a quarter of idle_after), the issue check, the periodic recapture.
func (t *tmuxRunner) quietWait() time.Duration {
	w := min(t.cfg.Monitor.IdleAfter.Duration/4, t.issueCheckEvery, recaptureEvery)
	return max(w, t.cfg.Monitor.Interval.Duration)
}

// changed returns the held runs whose agents changed in a way the monitor acts on (their snooze not yet over),
// from one listing of every pane.
func (t *tmuxRunner) changed(ctx context.Context, held map[int64]Held, now time.Time) (map[int64]Held, error) {
	panes, err := t.tmux.Panes(ctx)
	if err != nil {
		return nil, err
	}
	byName := make(map[string]tmuxops.Pane, len(panes))
	for _, p := range panes {
		byName[p.Session] = p
	}
	wake := map[int64]Held{}
	for id, h := range held {
		if !now.After(h.Until) && t.needsVisit(h, byName, now) {
			wake[id] = h
		}
	}
	return wake, nil
}

// needsVisit says whether the monitor would act on what the held agent shows now.
func (t *tmuxRunner) needsVisit(h Held, panes map[string]tmuxops.Pane, now time.Time) bool {
	pane, ok := panes[h.Session]
	if !ok || pane.Dead {
		return true
	}
	for _, f := range []string{doneFile, questionFile} {
		if untrusted.New(h.Workdir).Exists(f) {
			return true
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	o := t.seen[h.RunID]
	return o == nil || !o.revisit.IsZero() && !now.Before(o.revisit) || needCapture(o, pane, now, t.cfg.Monitor.Settle.Duration)
}

// Held is a monitored tmux run whose job sleeps while the pane watch (pkg/queue) looks at its agent for it.
type Held struct {
	RunID   int64
	Session string
	Workdir string
	Until   time.Time // the job's own snooze ends then: no need to wake it after
}

// Holdable says whether the job of r, which asked to be visited again after wait, may sleep a quiet interval
// instead while the pane watch looks at its agent (a monitored tmux run that waits the usual monitor.interval),
// and what it holds.
func (e *Engine) Holdable(r *store.Run, wait time.Duration) (quiet time.Duration, h Held, ok bool) {
	if Step(r.Step) != StepMonitor || Describe(r).Name() != store.RunnerTmux || r.Session == "" ||
		wait != e.cfg.Monitor.Interval.Duration {
		return wait, Held{}, false
	}
	quiet = e.tmux.quietWait()
	return quiet, Held{RunID: r.ID, Session: r.Session, Workdir: r.Workdir, Until: time.Now().Add(quiet)}, true
}

// Changed returns the held runs whose agents changed in a way the monitor acts on, from one look at every pane.
func (e *Engine) Changed(ctx context.Context, held map[int64]Held, now time.Time) (map[int64]Held, error) {
	return e.tmux.changed(ctx, held, now)
}
