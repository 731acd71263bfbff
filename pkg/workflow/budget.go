package workflow

import (
	"context"
	"fmt"
	"time"

	"github.com/aceworks/ace/pkg/store"
)

// Budgets ([budget]). A run at budget.run is not nudged on: at its next idle moment (an idle composer, a turn
// that ended without finishing) the issue is asked whether to go on, and each answer grants one more budget. A
// day at budget.day dispatches no new run until the next day (UTC); runs already going keep their own budget.

// budgetStop is asked at a run's idle moment, before a nudge: ok when the run reached its budget, and res the
// report that a human is to be asked now (the node asks: Engine.reported) — or a best-of attempt's way to
// finalize. last is what the human gets to see of the agent (its screen, its last words).
func (sp *spending) budgetStop(ctx context.Context, r *store.Run, last string) (Result, bool, error) {
	b := sp.cfg.Budget.Run
	if !b.Set() {
		return Result{}, false, nil
	}
	sp.refreshUsage(ctx, r, true) // usage.go: the figure of this moment, not one up to 30 s old
	// A best-of attempt counts what all N attempts spent (attemptsSpent).
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
	return askInWords(msg, last).then(func() { // the node asks (Engine.reported)
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

// attemptsSpent is what every attempt of r's best-of parent spent so far (r's own figure when r is no attempt):
// budget.run bounds the N attempts together.
func (sp *spending) attemptsSpent(ctx context.Context, r *store.Run) (*store.Usage, error) {
	a := r.State.AttemptOf
	if a == nil {
		return r.State.Usage, nil
	}
	p, err := sp.store.GetRun(ctx, a.Parent)
	if err != nil {
		return nil, fmt.Errorf("read the best-of parent of run %d: %w", r.ID, err)
	}
	var runs []*store.Run
	if bo := p.State.BestOf; bo != nil {
		if runs, err = sp.core.attemptRuns(ctx, bo); err != nil {
			return nil, err
		}
	}
	own := false
	for i, x := range runs {
		if x.ID == r.ID {
			runs[i], own = r, true // its own figure as of this moment, not as last saved
		}
	}
	if !own {
		runs = append(runs, r) // the parent died before it recorded r
	}
	sum := spentByAttempts(runs)
	return &sum, nil
}

// spentByAttempts adds up what every attempt of a best-of run spent (budget.run bounds it).
func spentByAttempts(attempts []*store.Run) store.Usage {
	var sum store.Usage
	for _, a := range attempts {
		if a.State.Usage != nil {
			sum.Add(*a.State.Usage)
		}
	}
	return sum
}
