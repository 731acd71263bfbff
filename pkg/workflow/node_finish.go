package workflow

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/sanitize"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tracker"
)

// finalize commits what the agent left uncommitted, pushes the branch and finds or opens the pull request.
func (e *Engine) finalize(ctx context.Context, r *store.Run) (Result, error) {
	e.spend.refreshUsage(ctx, r, true) // usage.go: the pull request's body shows it
	ws, err := e.openWork(ctx, r)
	if err != nil {
		return Result{}, fmt.Errorf("open working copy: %w", err)
	}
	e.memory.keepAgentContextFile(ctx, r, ws)
	if _, _, err := ws.CommitAll(ctx, fmt.Sprintf("ace: work on #%d: %s", r.Issue, sanitize.Line(r.State.Title))); err != nil {
		return Result{}, fmt.Errorf("commit remaining changes: %w", err)
	}
	ahead, err := ws.CommitsAhead(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("count commits: %w", err)
	}
	if ahead == 0 {
		r.Error = "the agent made no changes"
		if s, err := e.runner(r).Screen(ctx, r, 0); err == nil {
			r.State.LastScreen = s
		}
		return Goto(StepFailed), nil
	}
	if res, ok, err := e.flow.verifyBeforePR(ctx, r, ws); ok {
		return res, err // the agent has a failed verify to fix (node_verify.go)
	}
	if err := e.pushFenced(ctx, r, ws); err != nil {
		return Result{}, fmt.Errorf("push %s: %w", r.Branch, err)
	}
	e.event(ctx, r, "pushed", fmt.Sprintf("pushed %s (%d commits)", r.Branch, ahead))
	if r.State.AttemptOf != nil {
		return e.attemptPushed(ctx, r, ws) // a best-of attempt opens no pull request (bestof_attempt.go)
	}
	if r.State.Follow != nil && r.PRNumber != 0 {
		return Goto(StepReport), nil // a follow-up round: the push updated the pull request (node_follow.go)
	}
	pr, err := e.o.Tracker.FindPR(ctx, r.Repo, r.Branch)
	if err != nil {
		return Result{}, trackerErr(fmt.Errorf("look for an open pull request: %w", err))
	}
	if pr == nil {
		_, unverified := verifyReport(r)
		pr, err = e.o.Tracker.CreatePR(ctx, r.Repo, tracker.NewPR{
			Title: sanitize.Line(r.State.Title), Body: e.prBody(r, ahead), Head: r.Branch, Base: r.BaseBranch,
			Draft: e.cfg.PR.Draft || unverified,
		})
		if err != nil {
			return Result{}, trackerErr(fmt.Errorf("open the pull request: %w", err))
		}
		e.event(ctx, r, "pull-request", "opened "+pr.URL)
		e.flow.labelPR(ctx, r, pr.Number)
	}
	r.PRNumber, r.PRURL = pr.Number, pr.URL
	return Goto(StepReport), nil
}

func (e *Engine) prBody(r *store.Run, commits int) string {
	var b strings.Builder
	prIntro(&b, r)
	fmt.Fprintf(&b, "---\nMade by ace: agent `%s`, attempt %d, %d commit(s), %s.\n", r.Agent, r.Attempt, commits,
		e.o.Now().Sub(r.CreatedAt).Round(time.Second))
	if r.State.Usage != nil {
		b.WriteString("Usage: " + UsageLine(r.State.Usage) + ".\n")
	}
	return b.String()
}

// report ends a successful run: the agent's session is closed, labels and the status comment say done.
func (e *Engine) report(ctx context.Context, r *store.Run) (Result, error) {
	if r.State.AttemptOf != nil {
		return e.attemptDone(ctx, r) // bestof_attempt.go
	}
	if res, ok, err := e.follow.reportFollow(ctx, r); ok {
		return res, err // the pull request is followed until it is merged (node_follow.go)
	}
	if err := e.endSession(ctx, r); err != nil {
		return Result{}, err
	}
	e.memory.remember(ctx, r, "done")
	l := e.cfg.Labels
	if err := e.status.setLabels(ctx, r, []string{l.Done}, l.Running, l.NeedsInput); err != nil {
		return Result{}, trackerErr(err)
	}
	if err := e.status.postStatus(ctx, r, statusView{Status: store.StatusDone, Headline: "done — pull request " + r.PRURL}); err != nil {
		return Result{}, trackerErr(err)
	}
	e.finish(r)
	return Goto(StepDone).With(store.StatusDone), nil
}

// failed reports why a run failed, with the agent's last screen, and closes its session; the working copy stays.
func (e *Engine) failed(ctx context.Context, r *store.Run) (Result, error) {
	e.stopAttempts(ctx, r, "its best-of run failed: "+r.Error) // bestof.go
	if r.State.LastScreen == "" {
		if s, err := e.runner(r).Screen(ctx, r, 0); err == nil {
			r.State.LastScreen = s // a headless run's last words were kept as its turn ended
		}
	}
	if err := e.endSession(ctx, r); err != nil {
		return Result{}, err
	}
	e.memory.remember(ctx, r, "failed")
	l := e.cfg.Labels
	if err := e.status.setLabels(ctx, r, []string{l.Failed}, l.Running, l.NeedsInput); err != nil {
		return Result{}, trackerErr(err)
	}
	detail := ""
	if s := strings.TrimSpace(r.State.LastScreen); s != "" {
		detail = "The agent's last screen:\n\n" + quote(s)
	}
	detail += fmt.Sprintf("\n\nThe working copy is kept. To try again, remove `%s` (keep `%s`), or run `ace run --issue %d`.",
		l.Failed, e.cfg.Trigger.Label, r.Issue)
	if err := e.status.postStatus(ctx, r, statusView{Status: store.StatusFailed, Headline: "failed: " + r.Error, Detail: detail}); err != nil {
		return Result{}, trackerErr(err)
	}
	e.finish(r)
	return Result{Status: store.StatusFailed}, nil
}

// cancelled stops the agent of an issue that was closed, unlabelled or stopped by `ace stop`.
func (e *Engine) cancelled(ctx context.Context, r *store.Run) (Result, error) {
	e.stopAttempts(ctx, r, "its best-of run was cancelled: "+r.Error) // bestof.go
	if err := e.endSession(ctx, r); err != nil {
		return Result{}, err
	}
	e.memory.remember(ctx, r, "cancelled")
	l := e.cfg.Labels
	if err := e.status.setLabels(ctx, r, nil, l.Running, l.NeedsInput); err != nil {
		return Result{}, trackerErr(err)
	}
	if err := e.status.postStatus(ctx, r, statusView{Status: store.StatusCancelled, Headline: "cancelled: " + r.Error + "; the working copy is kept"}); err != nil {
		return Result{}, trackerErr(err)
	}
	e.finish(r)
	return Result{Status: store.StatusCancelled}, nil
}
