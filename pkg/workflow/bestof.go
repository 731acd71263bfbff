package workflow

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
)

// Best-of-N (agent.attempts, an ace:best-of-N label). The run that claims the issue is the parent: it keeps the
// issue's labels, its status comment and its one pull request, and at step best_of starts N attempts — runs of
// their own (row, job, slot, agent), each in working copy <issue>-<k> on branch <branch>-<k> (Spec.Copy) — that go
// from prepare_workspace through finalize like any run: verify runs there, and its rounds go back to the agent.
// An attempt pushes its branch and ends (done, no pull request; bestof_attempt.go). The parent waits for all of
// them, bounded by monitor.timeout from their start, judges each (verify passed, then the smallest change, then
// the cheapest; one that pushed nothing loses), and opens the pull request from the winner's branch with every
// attempt listed. It holds no slot while it waits (slots.go waits): its attempts hold one each.

// bestOfN is how many attempts the issue asks for: an ace:best-of-N label, else agent.attempts; and why.
func (e *Engine) bestOfN(labels []string) (n int, why string) {
	if p := e.cfg.Labels.BestOfPrefix; p != "" {
		for _, l := range labels {
			if v, ok := strings.CutPrefix(l, p); ok {
				if k, err := strconv.Atoi(v); err == nil && k >= 1 && k <= config.MaxAttempts {
					n, why = k, "label "+l
				}
			}
		}
	}
	if n == 0 {
		n, why = e.cfg.Agent.Attempts, fmt.Sprintf("agent.attempts = %d", e.cfg.Agent.Attempts)
	}
	return n, why
}

// bestOf is the parent's step: it starts the attempts not started yet, waits for them, then judges them and
// opens the pull request from the best.
func (e *Engine) bestOf(ctx context.Context, r *store.Run) (Result, error) {
	bo := *r.State.BestOf // a copy: the engine saves the run when its state differs from before the step
	bo.Attempts = slices.Clone(bo.Attempts)
	defer func() { r.State.BestOf = &bo }()
	if bo.Since.IsZero() {
		bo.Since = e.o.Now()
	}
	for k := len(bo.Attempts) + 1; k <= bo.N; k++ {
		a, err := e.startAttempt(ctx, r, k)
		if err != nil {
			return Result{}, err
		}
		bo.Attempts = append(bo.Attempts, a.ID)
	}
	attempts, err := e.attemptRuns(ctx, &bo)
	if err != nil {
		return Result{}, err
	}
	limit := e.cfg.Monitor.Timeout.Duration
	over := limit > 0 && e.since(bo.Since) > limit
	var live int
	var ended []string
	for _, a := range attempts {
		if a.Status.Terminal() {
			ended = append(ended, fmt.Sprintf("attempt %d %s", a.State.AttemptOf.K, a.Status))
			continue
		}
		live++
		if over {
			e.stopAttempt(ctx, a, fmt.Sprintf("best-of: the attempts did not all finish within monitor.timeout (%s)", limit))
		}
	}
	if live > 0 && len(ended) != bo.Ended {
		headline := fmt.Sprintf("best of %d: %d of %d attempts ended (%s)", bo.N, len(ended), bo.N, strings.Join(ended, ", "))
		if err := e.status.postStatus(ctx, r, statusView{Headline: headline}); err != nil {
			return Result{}, trackerErr(err)
		}
		bo.Ended = len(ended)
	}
	if live > 0 {
		// An attempt that ends wakes this run (attemptEnded); the look every minute is for one that could not.
		return Stay(min(time.Minute, max(limit-e.since(bo.Since), e.cfg.Monitor.Interval.Duration))), nil
	}
	bo.Results = judge(attempts)
	return e.openBestPR(ctx, r, &bo)
}

// startAttempt creates attempt k of r (or finds it, created by a visit that died before it saved r) and makes its
// job due.
func (e *Engine) startAttempt(ctx context.Context, r *store.Run, k int) (*store.Run, error) {
	agent := e.cfg.AttemptAgent(r.Agent, k)
	prof, err := e.o.Profile(agent)
	if err != nil {
		return nil, Terminalf("best-of attempt %d: agent %q: %w", k, agent, err)
	}
	a := &store.Run{
		Repo: r.Repo, Issue: r.Issue, Attempt: store.AttemptNumber(r.Attempt, k), Agent: agent, Runner: runnerOf(prof),
		Step: string(StepPrepare), Status: store.StatusActive, TriggeredAt: r.TriggeredAt, Host: r.Host,
		Branch: attemptBranch(r.Branch, k), BaseBranch: r.BaseBranch,
		State: store.RunState{Title: r.State.Title, Labeled: r.State.Labeled, Model: r.State.Model,
			AttemptOf: &store.AttemptState{Parent: r.ID, K: k}},
		Slot: store.SlotWait, SlotAt: e.o.Now(),
	}
	if err := e.o.Store.CreateRun(ctx, a); err != nil {
		if !errors.Is(err, store.ErrConflict) {
			return nil, fmt.Errorf("create best-of attempt %d: %w", k, err)
		}
		if a, err = e.findAttempt(ctx, r, k); err != nil {
			return nil, err
		}
	} else {
		e.event(ctx, a, "created", fmt.Sprintf("best-of attempt %d of %d with agent %s, for run %d", k, r.State.BestOf.N, agent, r.ID))
		e.event(ctx, r, EventBestOf, fmt.Sprintf("attempt %d: run %d with agent %s on %s", k, a.ID, agent, a.Branch))
	}
	if err := e.enqueue(ctx, a); err != nil && !errors.Is(err, errNoJobs) {
		return nil, fmt.Errorf("enqueue best-of attempt %d: %w", k, err)
	}
	return a, nil
}

// findAttempt is attempt k of r as the store has it.
func (e *Engine) findAttempt(ctx context.Context, r *store.Run, k int) (*store.Run, error) {
	runs, err := e.o.Store.ListRuns(ctx, store.Filter{Repo: r.Repo, Issue: r.Issue})
	if err != nil {
		return nil, fmt.Errorf("look up best-of attempt %d: %w", k, err)
	}
	for _, a := range runs {
		if a.Attempt == store.AttemptNumber(r.Attempt, k) {
			return a, nil
		}
	}
	return nil, fmt.Errorf("best-of attempt %d of run %d: %w", k, r.ID, store.ErrNotFound)
}

// attemptRuns reads the parent's attempts, in order of k.
func (e *Engine) attemptRuns(ctx context.Context, bo *store.BestOfState) ([]*store.Run, error) {
	out := make([]*store.Run, 0, len(bo.Attempts))
	for _, id := range bo.Attempts {
		a, err := e.o.Store.GetRun(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("read best-of attempt run %d: %w", id, err)
		}
		out = append(out, a)
	}
	return out, nil
}

// attemptBranch is attempt k's branch beside the parent's.
func attemptBranch(branch string, k int) string { return fmt.Sprintf("%s-%d", branch, k) }

// stopAttempt moves an unfinished attempt to cancelled and wakes its job, which ends its agent there.
func (e *Engine) stopAttempt(ctx context.Context, a *store.Run, why string) {
	err := e.updateFresh(ctx, a, cancelMove(why))
	if err != nil && !errors.Is(err, errNoChange) {
		e.log.WarnContext(ctx, "stop a best-of attempt", "run", a.ID, "err", err)
		return
	}
	e.wake(ctx, a)
}

// stopAttempts stops the unfinished attempts of a best-of parent that ends without them (ace stop, the issue
// closed, a failure).
func (e *Engine) stopAttempts(ctx context.Context, r *store.Run, why string) {
	if r.State.BestOf == nil {
		return
	}
	attempts, err := e.attemptRuns(ctx, r.State.BestOf)
	if err != nil {
		e.log.WarnContext(ctx, "stop the best-of attempts", "run", r.ID, "err", err)
		return
	}
	for _, a := range attempts {
		if !a.Status.Terminal() {
			e.stopAttempt(ctx, a, why)
		}
	}
}

// judge makes each attempt's result, in order of k.
func judge(attempts []*store.Run) []store.AttemptResult {
	out := make([]store.AttemptResult, 0, len(attempts))
	for _, a := range attempts {
		res := store.AttemptResult{Run: a.ID, Agent: a.Agent, Branch: a.Branch, Status: a.Status, Error: a.Error, Usage: a.State.Usage}
		if at := a.State.AttemptOf; at != nil {
			res.K, res.Pushed, res.Files, res.Lines = at.K, at.Pushed, at.Files, at.Lines
		}
		if w := a.State.Workflow; w != nil && w.VerifiedHead != "" {
			res.Verify = "failed"
			if w.VerifyPassed {
				res.Verify = "passed"
			}
		}
		out = append(out, res)
	}
	return out
}
