package workflow

import (
	"context"
	"fmt"
	"slices"

	"github.com/aceworks/ace/pkg/store"
)

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
