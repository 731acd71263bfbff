package workflow

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
)

// spending is what the agents spent (usage.go) and the budgets that bound it.
type spending struct {
	core  spendingCore
	store spendingStore
	agent *runAgent
	cfg   *config.Config // budgets, prices, the trigger's label
	root  string         // workspace.root: the agents' homes, where their CLIs keep their sessions
	now   func() time.Time
	log   *slog.Logger

	mu        sync.Mutex
	usageRead map[int64]time.Time // when each run's agent's own usage records were last read (refreshUsage)
}

// spendingCore is what spending needs of the engine's core: the run's events and runner, its record of files
// ace refused, and a best-of parent's attempts.
type spendingCore interface {
	event(ctx context.Context, r *store.Run, kind EventKind, msg string)
	runner(r *store.Run) Runner
	noteRefusal(ctx context.Context, r *store.Run, err error) bool
	attemptRuns(ctx context.Context, bo *store.BestOfState) ([]*store.Run, error)
}

// spendingStore is the store as spending reads it: a best-of parent, and today's runs.
type spendingStore interface {
	GetRun(ctx context.Context, id int64) (*store.Run, error)
	ListRuns(ctx context.Context, f store.Filter) ([]*store.Run, error)
}

// Budgets ([budget]). A run at budget.run is not nudged on: at its next idle moment (an idle composer, a turn
// that ended without finishing) the issue is asked whether to go on, and each answer grants one more budget. A
// day at budget.day dispatches no new run until the next day (UTC); runs already going keep their own budget.

// budgetStop is asked at a run's idle moment, before a nudge: ok when the run reached its budget, and res the
// report that a human is to be asked now (the node asks: node_reports.go) — or a best-of attempt's way to
// finalize. last is what the human gets to see of the agent (its screen, its last words).
func (sp *spending) budgetStop(ctx context.Context, r *store.Run, last string) (Result, bool, error) {
	b := sp.cfg.Budget.Run
	if !b.Set() {
		return Result{}, false, nil
	}
	sp.refreshUsage(ctx, r, true) // usage.go: the figure of this moment, not one up to 30 s old
	// A best-of attempt counts what all N attempts spent (bestof_attempt.go).
	u, err := sp.attemptsSpent(ctx, r)
	if err != nil {
		return Result{}, false, err
	}
	if u == nil || !b.Reached(u.CostUSD, u.Tokens(), r.State.BudgetGrants+1) {
		return Result{}, false, nil
	}
	if r.State.AttemptOf != nil {
		// No human is asked for one attempt of several: it stops, and what it has is pushed and judged.
		sp.core.event(ctx, r, EventBudget, fmt.Sprintf("the best-of attempts together spent %s (budget.run: %s): attempt %d stops "+
			"here, its work so far judged with the others'", spent(u.CostUSD, u.Tokens()), budgetLine(b, 1), r.State.AttemptOf.K))
		return Goto(StepFinalize), true, nil
	}
	msg := fmt.Sprintf("The run reached its budget: it spent %s (budget.run: %s). The agent is idle and was not "+
		"nudged on. Reply to let it go on for one more budget, or stop it (`ace stop %d`, or remove the %q label).",
		spent(u.CostUSD, u.Tokens()), budgetLine(b, r.State.BudgetGrants+1), r.Issue, sp.cfg.Trigger.Label)
	return askInWords(msg, last).then(func() { // the node asks (node_reports.go)
		r.State.BudgetAsked = true
		sp.core.event(ctx, r, EventBudget, "stopped at its budget: "+spent(u.CostUSD, u.Tokens()))
	}), true, nil
}

// budgetGranted is recordAnswer's part: an answer to the budget question lets the run spend one more budget.
func budgetGranted(r *store.Run) {
	if r.State.BudgetAsked {
		r.State.BudgetAsked = false
		r.State.BudgetGrants++
	}
}

// dayBudgetReached reports whether the runs created today (UTC) spent budget.day; until is the next day's start.
func (sp *spending) dayBudgetReached(ctx context.Context) (reached bool, spentNow string, until time.Time, err error) {
	b := sp.cfg.Budget.Day
	if !b.Set() {
		return false, "", time.Time{}, nil
	}
	now := sp.now().UTC()
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	runs, err := sp.store.ListRuns(ctx, store.Filter{CreatedSince: day})
	if err != nil {
		return false, "", time.Time{}, fmt.Errorf("list today's runs: %w", err)
	}
	var sum store.Usage
	for _, r := range runs {
		if u := r.State.Usage; u != nil {
			sum.Add(*u)
		}
	}
	return b.Reached(sum.CostUSD, sum.Tokens(), 1), spent(sum.CostUSD, sum.Tokens()), day.AddDate(0, 0, 1), nil
}
