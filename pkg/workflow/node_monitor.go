package workflow

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/aceworks/ace/pkg/store"
)

// The monitor node, and the engine's rulings on a monitored run that it makes and the runners ask for (runHost):
// is its issue still wanted, has it run out of monitor.timeout, may its agent, gone, start again (restart_cause.go
// says why it is gone).

// monitor is one level-based look at the run: it decides from what is true now, never from remembered events.
func (e *Engine) monitor(ctx context.Context, r *store.Run) (Result, error) {
	if next, ok := e.checkIssue(ctx, r); ok {
		return next, nil
	}
	if res, ok, err := e.limits.gate(ctx, r); ok || err != nil { // usage limits: limits.go
		return res, err
	}
	if res, ok, err := e.reach.gate(ctx, r); ok || err != nil { // the model unreachable too long: reach.go
		return e.reported(ctx, r, res, err)
	}
	rn := e.runner(r)
	if res, busy, err := rn.Busy(ctx, r); busy || err != nil {
		return e.reported(ctx, r, res, err) // what the runner saw: Engine.reported decides
	}
	if summary, ok := e.readProtocolFile(ctx, r, doneFile); ok {
		r.State.Summary = summary
		e.event(ctx, r, "done", "the agent wrote .ace/DONE")
		return Goto(StepFinalize), nil
	}
	if q, ok := e.readProtocolFile(ctx, r, questionFile); ok && q != "" {
		return e.reported(ctx, r, askInWords(q, ""), nil)
	}
	res, err := rn.Observe(ctx, r)
	return e.reported(ctx, r, res, err)
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

// restartData is an agent-exited event's Data when the agent is started again.
type restartData struct {
	Cause    string `json:"cause"` // "agent" or "host"
	Evidence string `json:"evidence,omitempty"`
	Counted  bool   `json:"counted"` // against monitor.max_restarts
	Restarts int    `json:"restarts"`
}

// mayRestart reports whether run r's agent, gone for c without leaving work, may be started again: always when
// the host took it, else while monitor.max_restarts is not spent.
func (e *Engine) mayRestart(r *store.Run, c exitCause) bool {
	return c.host || r.Restarts < e.cfg.Monitor.MaxRestarts
}

// restarted counts a restart for c (the agent's own end spends one of monitor.max_restarts) and records it,
// cause and evidence, as an agent-exited event; did says what ace did ("restarting it").
func (e *Engine) restarted(ctx context.Context, r *store.Run, c exitCause, did string) {
	m := e.cfg.Monitor.MaxRestarts
	d := restartData{Cause: "agent", Counted: !c.host}
	msg := fmt.Sprintf("%s without changes; %s (%d/%d)", c.how, did, r.Restarts+1, m)
	if c.host {
		d.Cause, d.Evidence = "host", c.why
		msg = fmt.Sprintf("%s without changes (%s); %s — the host's doing, not the agent's: not counted against "+
			"monitor.max_restarts (%d/%d)", c.how, c.why, did, r.Restarts, m)
	} else {
		r.Restarts++
	}
	d.Restarts = r.Restarts
	data, _ := json.Marshal(d)
	e.eventData(ctx, r, EventAgentExited, msg, string(data))
}
