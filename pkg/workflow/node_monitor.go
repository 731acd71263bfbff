package workflow

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workspace"
)

// monitor is one level-based look at the run: it decides from what is true now, never from remembered events.
func (e *Engine) monitor(ctx context.Context, r *store.Run) (Result, error) {
	if next, ok := e.checkIssue(ctx, r); ok {
		return next, nil
	}
	if res, ok, err := e.limits.limitGate(ctx, r); ok || err != nil { // usage limits: limits.go
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
		if err := e.humans.askHuman(ctx, r, q, ""); err != nil {
			return Result{}, err
		}
		return toHuman(), nil
	}
	return rn.Observe(ctx, r)
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

// readProtocolFile reads a done-protocol file of the working copy, sanitized like any agent output.
func readProtocolFile(workdir, rel string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(workdir, rel))
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(workspace.Sanitize(string(b))), true
}
