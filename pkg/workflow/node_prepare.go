package workflow

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workspace"
)

// claim marks the issue as taken: status labels and the sticky status comment.
func (e *Engine) claim(ctx context.Context, r *store.Run) (Result, error) {
	iss, err := e.o.Tracker.Issue(ctx, r.Repo, r.Issue)
	if err != nil {
		return Result{}, trackerErr(fmt.Errorf("read issue %s#%d: %w", r.Repo, r.Issue, err))
	}
	if iss.IsPR {
		return Result{}, Terminalf("%s#%d is a pull request, not an issue", r.Repo, r.Issue)
	}
	if iss.State == "closed" {
		r.Error = "the issue is closed"
		return Goto(StepCancelled), nil
	}
	r.State.Title = iss.Title
	if slices.Contains(iss.Labels, e.cfg.Trigger.Label) {
		// Only a run started by the label is cancelled when the label goes; `ace run` works on any issue.
		r.State.Labeled = true
	}
	l := e.cfg.Labels
	if err := e.status.setLabels(ctx, r, []string{l.Running}, l.Failed, l.Done, l.NeedsInput); err != nil {
		return Result{}, trackerErr(err)
	}
	if n, why := e.bestOfN(iss.Labels); n > 1 && r.State.BestOf == nil && r.State.AttemptOf == nil {
		r.State.BestOf = &store.BestOfState{N: n, Why: why} // bestof.go
	}
	if bo := r.State.BestOf; bo != nil { // (a parent moved to another host comes back here with its attempts)
		if r.Branch == "" {
			r.Branch = workspace.BranchName(e.cfg.PR.Branch, r.Issue, r.State.Title)
		}
		headline := fmt.Sprintf("on it — best of %d (%s): starting %d agents", bo.N, bo.Why, bo.N)
		if err := e.status.postStatus(ctx, r, statusView{Headline: headline}); err != nil {
			return Result{}, trackerErr(err)
		}
		return Goto(StepBestOf), nil
	}
	if err := e.status.postStatus(ctx, r, statusView{Headline: "on it — preparing a working copy"}); err != nil {
		return Result{}, trackerErr(err)
	}
	return Goto(StepPrepare), nil
}

// prepareWorkspace makes the per-issue working copy on the run's branch (reused when it exists).
func (e *Engine) prepareWorkspace(ctx context.Context, r *store.Run) (Result, error) {
	repo, err := e.o.Tracker.Repo(ctx, r.Repo)
	if err != nil {
		return Result{}, trackerErr(fmt.Errorf("read repository %s: %w", r.Repo, err))
	}
	if r.Branch == "" {
		r.Branch = workspace.BranchName(e.cfg.PR.Branch, r.Issue, r.State.Title)
	}
	base := r.BaseBranch
	if base == "" {
		base = repo.DefaultBranch
	}
	ws, err := e.o.Workspaces.Prepare(ctx, workspace.Spec{
		Repo: r.Repo, Issue: r.Issue, RemoteURL: repo.CloneURL, BaseBranch: base, Branch: r.Branch, Copy: copyOf(r),
	})
	if err != nil {
		return Result{}, fmt.Errorf("prepare working copy: %w", err)
	}
	r.Workdir, r.BaseBranch = ws.Dir, ws.BaseBranch
	r.State.RemoteURL = repo.CloneURL
	e.event(ctx, r, "workspace", ws.Dir+" on "+ws.Branch)
	if err := e.flow.prepareRepoflow(ctx, r, ws, repo.DefaultBranch); err != nil {
		return Result{}, err // a bad workflow file fails the run here, before any agent (repoflow.go)
	}
	e.memory.provideMemory(ctx, r, ws)
	return Goto(StepWriteTask), nil
}

// writeTask writes ACE_TASK.md from the issue as it is now, and clears done-protocol files left by an earlier
// attempt (a stale .ace/DONE would end this attempt before it began).
func (e *Engine) writeTask(ctx context.Context, r *store.Run) (Result, error) {
	iss, err := e.o.Tracker.Issue(ctx, r.Repo, r.Issue)
	if err != nil {
		return Result{}, trackerErr(fmt.Errorf("read issue: %w", err))
	}
	comments, err := e.o.Tracker.Comments(ctx, r.Repo, r.Issue, time.Time{})
	if err != nil {
		return Result{}, trackerErr(fmt.Errorf("read comments: %w", err))
	}
	instructions, err := e.flow.repoflowSection(ctx, r, iss)
	if err != nil {
		return Result{}, err
	}
	t := workspace.Task{
		Repo: r.Repo, Issue: r.Issue, Title: iss.Title, URL: iss.URL, Author: iss.Author, Labels: iss.Labels,
		Body: iss.Body, Branch: r.Branch, BaseBranch: r.BaseBranch, TriggeredAt: r.TriggeredAt, Agent: r.Agent,
		Extra: e.memory.memorySection(r) + instructions,
	}
	for _, c := range comments {
		if isAceComment(c.Body) {
			continue
		}
		t.Comments = append(t.Comments, workspace.TaskComment{Author: c.Author, Body: c.Body, CreatedAt: c.CreatedAt})
	}
	if err := workspace.WriteTask(workCopy(r), t); err != nil {
		return Result{}, e.needFile(ctx, r, "write ACE_TASK.md", err)
	}
	if err := workCopy(r).MkdirAll(".ace", 0o755); err != nil {
		return Result{}, e.needFile(ctx, r, "create .ace", err)
	}
	for _, f := range []string{doneFile, questionFile} {
		if err := removeProtocolFile(r, f); err != nil {
			return Result{}, e.needFile(ctx, r, "clear "+f, err)
		}
	}
	if err := e.follow.writeRoundFile(r); err != nil { // a follow-up round's, in a copy new to it (follow.go)
		return Result{}, e.needFile(ctx, r, "write "+followFile, err)
	}
	return Goto(StepStartSession), nil
}
