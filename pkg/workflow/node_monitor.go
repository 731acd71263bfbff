package workflow

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tmuxops"
	"github.com/aceworks/ace/pkg/workspace"
)

// observed is what the monitor saw of a session last time: with it, a tick whose pane shows no new activity
// needs no screen capture. It is a cache; losing it (a restart) only costs one capture.
type observed struct {
	activity   time.Time
	screen     string
	state      agents.State
	changedAt  time.Time // when the screen last differed from the one before
	capturedAt time.Time
	readyAt    time.Time // deliver_prompt: since when the composer has been ready without a break
	// pasteIntent: this process saved the intent to paste the prompt and has not pasted yet (deliver_prompt).
	pasteIntent bool
}

// recaptureEvery bounds how stale a cached screen may get even when tmux reports no activity.
const recaptureEvery = 30 * time.Second

// monitor is one level-based look at the run: it decides from what is true now, never from remembered events.
func (e *Engine) monitor(ctx context.Context, r *store.Run) (Result, error) {
	if next, ok := e.checkIssue(ctx, r); ok {
		return next, nil
	}
	if res, ok, err := e.limitGate(ctx, r); ok || err != nil { // usage limits: node_limit.go
		return res, err
	}
	rn := e.runner(r)
	if res, busy, err := rn.Busy(ctx, r); busy || err != nil {
		return res, err
	}
	if summary, ok := readProtocolFile(r.Workdir, doneFile); ok {
		r.State.Summary = summary
		e.event(ctx, r, "done", "the agent wrote .ace/DONE")
		return Goto(StepFinalize), nil
	}
	if q, ok := readProtocolFile(r.Workdir, questionFile); ok && q != "" {
		if err := e.askHuman(ctx, r, q, ""); err != nil {
			return Result{}, err
		}
		return toHuman(), nil
	}
	return rn.Observe(ctx, r)
}

// observeScreen is the tmux runner's look at its agent: the pane gone or dead, a usage limit, a dialog, a
// question or an approval on screen, an idle composer (nudge, compaction) — each decided from the screen now.
func (e *Engine) observeScreen(ctx context.Context, r *store.Run) (Result, error) {
	m := e.cfg.Monitor
	pane, found, err := e.pane(ctx, r.Session)
	if err != nil {
		return Result{}, err
	}
	if !found || pane.Dead {
		return e.onAgentExit(ctx, r, pane, found)
	}
	prof, err := e.profile(r)
	if err != nil {
		return Result{}, err
	}
	o, err := e.look(ctx, r, prof, pane)
	if err != nil {
		return Result{}, err
	}
	if res, ok, err := e.limitOnScreen(ctx, r, prof, o); ok || err != nil { // node_limit.go
		return res, err
	}
	if e.timedOut(r, o.screen) {
		return Goto(StepFailed), nil
	}
	if (o.state == agents.StateApproval || o.state == agents.StateQuestion) && e.since(r.State.MonitorSince) < answerSettle {
		// Just answered (or just delivered): the agent may still show the menu it is leaving.
		return Stay(m.Interval.Duration), nil
	}
	switch o.state {
	case agents.StateApproval:
		if prof.AutoApprove && prof.Approve != nil {
			err := e.chooseOption(ctx, r, o.screen, prof.Approve)
			if err == nil {
				e.event(ctx, r, "approved", "answered a permission dialog (auto_approve)")
				return Stay(m.Interval.Duration), nil
			}
			if !errOptionMissing(err) {
				return Result{}, fmt.Errorf("approve: %w", err)
			}
			if err := e.askHuman(ctx, r, "The agent asks for permission, and ace (auto_approve) found no option "+
				"that allows it once:", o.screen); err != nil {
				return Result{}, err
			}
			return toHuman(), nil
		}
		if err := e.askHuman(ctx, r, "The agent asks for permission:", o.screen); err != nil {
			return Result{}, err
		}
		return toHuman(), nil
	case agents.StateQuestion:
		if err := e.askHuman(ctx, r, "The agent asks a question on its screen:", o.screen); err != nil {
			return Result{}, err
		}
		return toHuman(), nil
	case agents.StateDialog:
		return e.answerDialog(ctx, r, prof, o.screen, m.Interval.Duration)
	case agents.StateReady:
		if e.compactIfDue(ctx, r, prof, o.state) {
			return Stay(m.Interval.Duration), nil
		}
		idle := e.o.Now().Sub(latest(o.changedAt, pane.Activity))
		if idle >= m.IdleAfter.Duration && e.since(r.State.NudgedAt) >= m.IdleAfter.Duration {
			return e.onIdle(ctx, r, o.screen)
		}
	}
	return Stay(m.Interval.Duration), nil
}

// onIdle nudges an agent that sits at its prompt without having finished, up to max_nudges times; then a human
// is asked to look.
func (e *Engine) onIdle(ctx context.Context, r *store.Run, screen string) (Result, error) {
	m := e.cfg.Monitor
	if res, ok, err := e.budgetStop(ctx, r, screen); ok {
		return res, err
	}
	if r.Nudges >= m.MaxNudges {
		msg := fmt.Sprintf("The agent has been idle for %s after %d nudges without finishing. Its screen:", m.IdleAfter.Duration, r.Nudges)
		if err := e.askHuman(ctx, r, msg, screen); err != nil {
			return Result{}, err
		}
		return toHuman(), nil
	}
	if err := e.type_(ctx, r, e.nudgePrompt()); err != nil {
		return Result{}, fmt.Errorf("nudge: %w", err)
	}
	r.Nudges++
	r.State.NudgedAt = e.o.Now()
	e.event(ctx, r, "nudge", fmt.Sprintf("nudged the idle agent (%d/%d)", r.Nudges, m.MaxNudges))
	return Stay(m.Interval.Duration), nil
}

// onAgentExit handles a dead pane (or a vanished session): keep what the agent committed, else restart it a
// bounded number of times, else give up with its last screen.
func (e *Engine) onAgentExit(ctx context.Context, r *store.Run, pane tmuxops.Pane, found bool) (Result, error) {
	screen := ""
	if found {
		screen, _ = e.o.Sessions.Capture(ctx, r.Session, 0)
	}
	worked, err := e.leftWork(ctx, r)
	if err != nil {
		return Result{}, err
	}
	how := "the agent's session disappeared"
	if found {
		how = fmt.Sprintf("the agent exited with status %d", pane.ExitStatus)
		if pane.ExitStatus == tmuxops.ExitUnknown {
			how = "the agent exited (tmux did not report its status)"
		}
	}
	if worked {
		e.event(ctx, r, "agent-exited", how+"; finalizing what it did")
		return Goto(StepFinalize), nil
	}
	if r.Restarts < e.cfg.Monitor.MaxRestarts {
		r.Restarts++
		e.event(ctx, r, "agent-exited", fmt.Sprintf("%s without changes; restarting it (%d/%d)", how, r.Restarts, e.cfg.Monitor.MaxRestarts))
		e.forget(r.ID)
		name, err := e.sessionName(ctx, r)
		if err != nil {
			return Result{}, err
		}
		if err := e.launch(ctx, r, name, found, false); err != nil {
			return Result{}, err
		}
		r.State.PromptDelivered = false
		r.State.Resume = true
		return Goto(StepDeliver), nil
	}
	r.Error = fmt.Sprintf("%s %d times without making changes", how, r.Restarts+1)
	r.State.LastScreen = screen
	return Goto(StepFailed), nil
}

// timedOut reports whether the run has been monitored longer than monitor.timeout; if so it records why, with
// the agent's last screen (or last words), for the failure report.
func (e *Engine) timedOut(r *store.Run, last string) bool {
	limit := e.cfg.Monitor.Timeout.Duration
	if r.State.MonitorSince.IsZero() || e.since(r.State.MonitorSince) <= limit {
		return false
	}
	r.Error = fmt.Sprintf("the agent did not finish within monitor.timeout (%s)", limit)
	r.State.LastScreen = last
	return true
}

// leftWork reports whether the working copy holds work of the agent: commits ahead of the base, or changes.
func (e *Engine) leftWork(ctx context.Context, r *store.Run) (bool, error) {
	ws, err := e.o.Workspaces.Open(ctx, r.Repo, r.Issue)
	if err != nil {
		return false, fmt.Errorf("open working copy: %w", err)
	}
	ahead, err := ws.CommitsAhead(ctx)
	if err != nil {
		return false, fmt.Errorf("count commits: %w", err)
	}
	changed, err := ws.HasChanges(ctx)
	if err != nil {
		return false, fmt.Errorf("look for changes: %w", err)
	}
	return ahead > 0 || changed, nil
}

// look returns the session's screen and state, capturing only when needCapture says the screen may tell
// something new: with many sessions, capture-pane is the expensive call.
func (e *Engine) look(ctx context.Context, r *store.Run, prof agents.Profile, pane tmuxops.Pane) (*observed, error) {
	now := e.o.Now()
	e.mu.Lock()
	o := e.seen[r.ID]
	if o == nil {
		o = &observed{}
		e.seen[r.ID] = o
	}
	need := needCapture(o, pane, now, e.cfg.Monitor.Settle.Duration)
	e.mu.Unlock()
	if !need {
		return o, nil
	}
	screen, err := e.o.Sessions.Capture(ctx, r.Session, 0)
	if err != nil {
		return nil, fmt.Errorf("capture screen: %w", err)
	}
	state := prof.Classify(screen, pane.Dead, pane.ExitStatus)
	// Under the lock: the pane watch (needsVisit) reads the same record from its own goroutine.
	e.mu.Lock()
	if screen != o.screen || o.capturedAt.IsZero() {
		o.changedAt = now
	}
	o.screen, o.activity, o.capturedAt, o.state = screen, pane.Activity, now, state
	e.mu.Unlock()
	return o, nil
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
func (e *Engine) readyFor(runID int64, ready bool) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	o := e.seen[runID]
	if o == nil {
		o = &observed{}
		e.seen[runID] = o
	}
	now := e.o.Now()
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

func (e *Engine) forget(runID int64) {
	e.mu.Lock()
	delete(e.seen, runID)
	e.mu.Unlock()
}

// checkIssue asks the tracker, at most every IssueCheckEvery, whether the issue is still wanted.
func (e *Engine) checkIssue(ctx context.Context, r *store.Run) (Result, bool) {
	if e.since(r.State.IssueChecked) < e.o.IssueCheckEvery {
		return Result{}, false
	}
	iss, err := e.o.Tracker.Issue(ctx, r.Repo, r.Issue)
	if err != nil {
		// A tracker outage must not stop a working agent; look again next time.
		e.log.WarnContext(ctx, "check issue", "repo", r.Repo, "issue", r.Issue, "err", err)
		return Result{}, false
	}
	r.State.IssueChecked = e.o.Now()
	switch {
	case iss.State == "closed" && r.State.Follow != nil:
		// Merging the pull request closes the issue: follow_pr tells a merge (done) from a close.
		return Goto(StepFollowPR), true
	case iss.State == "closed":
		r.Error = "the issue was closed"
	case r.State.Labeled && !slices.Contains(iss.Labels, e.cfg.Trigger.Label):
		r.Error = fmt.Sprintf("the %q label was removed", e.cfg.Trigger.Label)
	default:
		return Result{}, false
	}
	return Goto(StepCancelled), true
}

// type_ pastes one line into the agent and submits it.
func (e *Engine) type_(ctx context.Context, r *store.Run, text string) error {
	prof, err := e.profile(r)
	if err != nil {
		return err
	}
	t := e.cfg.Tmux
	o := tmuxops.DeliverOptions{
		Ready: func(screen string) bool {
			st := prof.Classify(screen, false, 0)
			return st == agents.StateReady || st == agents.StateQuestion || st == agents.StateApproval
		},
		// Enter only once the paste shows, and again until the screen shows it taken, as for the task's prompt
		// (node_deliver.go): a follow-up round dropped by a busy CLI would otherwise be lost without a trace.
		Shown:        func(screen string) bool { return prof.ShowsPaste(screen, text) },
		PasteTimeout: pasteShowWait,
		Submitted:    func(before, after string) bool { return prof.Submitted(before, after, text) },
		// The agent was looked at a moment ago; a short wait covers a turn that is just ending.
		ReadyTimeout:  min(t.StartupTimeout.Duration, 10*time.Second),
		EnterCount:    t.EnterCount,
		EnterDelay:    t.EnterDelay.Duration,
		SubmitRetries: t.SubmitRetries,
	}
	e.forget(r.ID)
	return e.o.Sessions.Deliver(ctx, r.Session, text, o)
}

// readProtocolFile reads a done-protocol file of the working copy, sanitized like any agent output.
func readProtocolFile(workdir, rel string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(workdir, rel))
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(workspace.Sanitize(string(b))), true
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
