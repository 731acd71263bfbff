package config

// BudgetConfig caps what agents may spend, in tokens and US dollars as ace counts them (the agents' own records,
// priced with [prices] where an agent reports no cost). Zero means no cap.
type BudgetConfig struct {
	// Run caps one run: at its budget the run is not nudged on; at its next idle moment the agent stops and the
	// issue is asked whether to go on (each answer grants one more budget of the same size).
	Run Budget `toml:"run"`
	// Day caps all runs of one day (UTC, by the day a run was created, as `ace usage --by day`): once reached, no
	// new run is dispatched until the next day; running ones go on under their own budget.
	Day Budget `toml:"day"`
}

// Budget is a cap in dollars and one in tokens (input, output and cache tokens together); either may be zero.
type Budget struct {
	MaxCostUSD float64 `toml:"max_cost_usd"`
	MaxTokens  int64   `toml:"max_tokens"`
}

// Set reports whether the budget caps anything.
func (b Budget) Set() bool { return b.MaxCostUSD > 0 || b.MaxTokens > 0 }

// Reached reports whether spending cost dollars and tokens tokens reaches the budget, scaled by times (a run whose
// budget a human extended twice has three budgets).
func (b Budget) Reached(cost float64, tokens int64, times int) bool {
	n := float64(max(times, 1))
	return (b.MaxCostUSD > 0 && cost >= b.MaxCostUSD*n) || (b.MaxTokens > 0 && float64(tokens) >= float64(b.MaxTokens)*n)
}

func (c BudgetConfig) validate(bad func(key, format string, args ...any)) {
	for key, b := range map[string]Budget{"budget.run": c.Run, "budget.day": c.Day} {
		if b.MaxCostUSD < 0 {
			bad(key+".max_cost_usd", "%v is negative (0 means no cap)", b.MaxCostUSD)
		}
		if b.MaxTokens < 0 {
			bad(key+".max_tokens", "%d is negative (0 means no cap)", b.MaxTokens)
		}
	}
}
