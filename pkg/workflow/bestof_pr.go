package workflow

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/aceworks/ace/pkg/sanitize"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tracker"
)

// comparer is a tracker that can link the change between two branches (GitHub's compare view). Optional: without
// it the pull request names each attempt's branch only.
type comparer interface {
	CompareURL(repo, base, head string) string
}

// openBestPR takes the best attempt's branch for the parent's own and opens (or finds) the one pull request from
// it; with no attempt that pushed work, the run fails (or is cancelled, when every attempt was).
func (e *Engine) openBestPR(ctx context.Context, r *store.Run, bo *store.BestOfState) (Result, error) {
	bo.Winner = best(bo.Results)
	if bo.Winner == 0 {
		cancelled := true
		var why []string
		for _, res := range bo.Results {
			cancelled = cancelled && res.Status == store.StatusCancelled
			why = append(why, fmt.Sprintf("attempt %d (%s): %s", res.K, res.Agent, orDash(res.Error)))
		}
		r.Error = fmt.Sprintf("none of the %d best-of attempts pushed work — %s", bo.N, strings.Join(why, "; "))
		if cancelled {
			return Goto(StepCancelled), nil
		}
		return Goto(StepFailed), nil
	}
	win := bo.Results[bo.Winner-1]
	w, err := e.o.Store.GetRun(ctx, win.Run)
	if err != nil {
		return Result{}, fmt.Errorf("read the chosen attempt: %w", err)
	}
	// The parent carries on as the winner's run: its branch, agent and verify outcome, and its working copy and
	// agent's conversation (copyOf), so that a follow-up round of the pull request reaches the agent that did
	// the work, in its copy.
	r.Branch, r.BaseBranch, r.Agent, r.Runner = w.Branch, w.BaseBranch, w.Agent, w.Runner
	r.Workdir, r.Session, r.AgentSessionID = w.Workdir, w.Session, w.AgentSessionID
	r.State.Summary, r.State.Workflow = w.State.Summary, cloneWorkflowState(w.State.Workflow)
	e.event(ctx, r, EventBestOf, fmt.Sprintf("chose attempt %d of %d (run %d, %s): %s", win.K, bo.N, win.Run, win.Agent, resultLine(win)))
	pr, err := e.o.Tracker.FindPR(ctx, r.Repo, r.Branch)
	if err != nil {
		return Result{}, trackerErr(fmt.Errorf("look for an open pull request: %w", err))
	}
	if pr == nil {
		pr, err = e.o.Tracker.CreatePR(ctx, r.Repo, tracker.NewPR{
			Title: sanitize.Line(r.State.Title), Body: e.bestOfBody(r, bo), Head: r.Branch, Base: r.BaseBranch,
			Draft: e.cfg.PR.Draft || win.Verify == "failed",
		})
		if err != nil {
			return Result{}, trackerErr(fmt.Errorf("open the pull request: %w", err))
		}
		e.event(ctx, r, EventPullRequest, "opened "+pr.URL)
		e.flow.labelPR(ctx, r, pr.Number)
	}
	r.PRNumber, r.PRURL = pr.Number, pr.URL
	return Goto(StepReport), nil
}

// bestOfBody is the pull request's body: the winner's summary and verify line, then every attempt.
func (e *Engine) bestOfBody(r *store.Run, bo *store.BestOfState) string {
	var b strings.Builder
	prIntro(&b, r) // lines.go
	fmt.Fprintf(&b, "## Best of %d\n\n", bo.N)
	b.WriteString("| attempt | agent | verify | change | cost | branch |\n|---|---|---|---|---|---|\n")
	cmpr, _ := e.o.Tracker.(comparer)
	var total store.Usage
	for _, res := range bo.Results {
		k := fmt.Sprint(res.K)
		if res.K == bo.Winner {
			k = "**" + k + " (this pull request)**"
		}
		var change string
		if res.Pushed {
			change = fmt.Sprintf("%d file(s), %d line(s)", res.Files, res.Lines)
		} else {
			change = "nothing pushed (" + string(res.Status) + ")"
		}
		branch := "–"
		if res.Pushed {
			branch = "`" + res.Branch + "`"
			if cmpr != nil && res.K != bo.Winner {
				if u := cmpr.CompareURL(r.Repo, r.BaseBranch, res.Branch); u != "" {
					branch += " ([diff](" + u + "))"
				}
			}
		}
		cost := "–"
		if res.Usage != nil {
			cost = spent(res.Usage.CostUSD, res.Usage.Tokens())
			total.Add(*res.Usage)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", k, res.Agent, orDash(res.Verify), change, cost, branch)
	}
	fmt.Fprintf(&b, "\nChosen by: verify passed, then the smallest change, then the cheapest (%s). All %d attempts spent %s.\n",
		bo.Why, bo.N, spent(total.CostUSD, total.Tokens()))
	fmt.Fprintf(&b, "\n---\nMade by ace: best of %d, attempt %d with agent `%s`.\n", bo.N, bo.Winner, r.Agent)
	return b.String()
}

// best is the k of the best result that pushed its branch (0: none did): verify passed before failed or none,
// then the fewest lines changed, then the cheapest, then the first.
func best(results []store.AttemptResult) int {
	var win *store.AttemptResult
	for i := range results {
		c := &results[i]
		if !c.Pushed || c.Status != store.StatusDone {
			continue
		}
		if win == nil || better(c, win) {
			win = c
		}
	}
	if win == nil {
		return 0
	}
	return win.K
}

func better(a, b *store.AttemptResult) bool {
	if pa, pb := a.Verify == "passed", b.Verify == "passed"; pa != pb {
		return pa
	}
	if a.Lines != b.Lines {
		return a.Lines < b.Lines
	}
	ca, cb := costOf(a.Usage), costOf(b.Usage)
	return cmp.Compare(ca, cb) < 0
}

func costOf(u *store.Usage) float64 {
	if u == nil {
		return 0
	}
	return u.CostUSD
}
