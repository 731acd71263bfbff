package eval

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// AgentStats is one agent's account in a report: an agent as --agents named it, so that two releases of one CLI
// (claude@2.1.331, claude@2.1.332) stand side by side.
type AgentStats struct {
	Agent string `json:"agent"`
	// Runs counts the scored runs; NotScored those that do not count (RunResult.Invalid).
	Runs      int `json:"runs"`
	Solved    int `json:"solved"`
	NotScored int `json:"not_scored,omitempty"`
	// Rate is Solved/Runs, with its 95% Wilson score interval [Low, High].
	Rate float64 `json:"solve_rate"`
	Low  float64 `json:"solve_rate_low"`
	High float64 `json:"solve_rate_high"`
	// CostUSD is what all its scored runs cost; CostPerSolved that over the tasks solved (nil when none was).
	CostUSD       float64  `json:"cost_usd"`
	CostPerSolved *float64 `json:"cost_per_solved_usd"`
	Tokens        int64    `json:"tokens"`
	// MedianSeconds is the median wall time of its scored runs.
	MedianSeconds float64  `json:"median_seconds"`
	CLIVersions   []string `json:"cli_versions,omitempty"`
	Models        []string `json:"models,omitempty"`
}

// TaskRow is one task's line: how many of each agent's scored runs solved it.
type TaskRow struct {
	InstanceID string         `json:"instance_id"`
	Solved     map[string]int `json:"solved"` // by agent
	Runs       map[string]int `json:"runs"`   // by agent
	// SolvedBy lists the agents that solved it at least once.
	SolvedBy []string `json:"solved_by"`
}

// Report sums results up by agent and by task.
type Report struct {
	Repo   string       `json:"repo"`
	Runs   int          `json:"runs"`
	Agents []AgentStats `json:"agents"`
	Tasks  []TaskRow    `json:"tasks"`
}

// Summarize makes the report of results: agents in the order they first appear, tasks by instance id.
func Summarize(results []RunResult) Report {
	var rep Report
	byAgent := map[string]*AgentStats{}
	times := map[string][]float64{}
	byTask := map[string]*TaskRow{}
	var agentOrder []string
	for _, r := range results {
		rep.Repo = r.Repo
		rep.Runs++
		a := byAgent[r.Agent]
		if a == nil {
			a = &AgentStats{Agent: r.Agent}
			byAgent[r.Agent] = a
			agentOrder = append(agentOrder, r.Agent)
		}
		if r.Invalid != "" {
			a.NotScored++
			continue
		}
		a.Runs++
		a.CostUSD += r.Usage.CostUSD
		a.Tokens += r.Usage.InputTokens + r.Usage.OutputTokens + r.Usage.CacheReadTokens + r.Usage.CacheWriteTokens
		times[r.Agent] = append(times[r.Agent], r.WallSeconds)
		addOnce(&a.CLIVersions, r.CLIVersion)
		addOnce(&a.Models, r.Model)
		t := byTask[r.InstanceID]
		if t == nil {
			t = &TaskRow{InstanceID: r.InstanceID, Solved: map[string]int{}, Runs: map[string]int{}}
			byTask[r.InstanceID] = t
		}
		t.Runs[r.Agent]++
		if r.Solved {
			a.Solved++
			t.Solved[r.Agent]++
			addOnce(&t.SolvedBy, r.Agent)
		}
	}
	for _, name := range agentOrder {
		a := byAgent[name]
		if a.Runs > 0 {
			a.Rate = float64(a.Solved) / float64(a.Runs)
		}
		a.Low, a.High = Wilson(a.Solved, a.Runs)
		if a.Solved > 0 {
			c := a.CostUSD / float64(a.Solved)
			a.CostPerSolved = &c
		}
		a.MedianSeconds = median(times[name])
		rep.Agents = append(rep.Agents, *a)
	}
	for _, id := range slices.Sorted(maps.Keys(byTask)) {
		t := byTask[id]
		slices.SortFunc(t.SolvedBy, func(x, y string) int { return slices.Index(agentOrder, x) - slices.Index(agentOrder, y) })
		if t.SolvedBy == nil {
			t.SolvedBy = []string{}
		}
		rep.Tasks = append(rep.Tasks, *t)
	}
	return rep
}

// z95 is the standard normal quantile of a two-sided 95% interval.
const z95 = 1.959963984540054

// Wilson is the 95% Wilson score interval of k successes in n trials: unlike the normal approximation it stays
// within [0, 1] and says something at 0 of n and n of n, which small task sets give often. 0 trials give [0, 1].
func Wilson(k, n int) (low, high float64) {
	if n <= 0 {
		return 0, 1
	}
	p, nf, z2 := float64(k)/float64(n), float64(n), z95*z95
	center := (p + z2/(2*nf)) / (1 + z2/nf)
	half := z95 * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf)) / (1 + z2/nf)
	return math.Max(0, center-half), math.Min(1, center+half)
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func addOnce(list *[]string, s string) {
	if s = strings.TrimSpace(s); s != "" && !slices.Contains(*list, s) {
		*list = append(*list, s)
	}
}

// Choice is the agent a report recommends for a repository's next issue, and why.
type Choice struct {
	Agent string `json:"agent"`
	Why   string `json:"why"`
}

// Best is the agent with the best solve rate per dollar among those with at least minRuns scored runs that solved
// something: the solve rate over the mean cost of a run. Runs that cost nothing that ace knows of (an agent
// whose model has no price) rank above any that cost something, among themselves by solve rate; a tie goes to the
// faster. ok is false when no agent qualifies.
func (rep Report) Best(minRuns int) (c Choice, ok bool) {
	var best *AgentStats
	perDollar := func(a *AgentStats) float64 {
		if a.CostUSD <= 0 {
			return math.Inf(1)
		}
		return a.Rate / (a.CostUSD / float64(a.Runs))
	}
	better := func(a, b *AgentStats) bool {
		pa, pb := perDollar(a), perDollar(b)
		switch {
		case pa != pb:
			return pa > pb
		case a.Rate != b.Rate:
			return a.Rate > b.Rate
		}
		return a.MedianSeconds < b.MedianSeconds
	}
	for i := range rep.Agents {
		a := &rep.Agents[i]
		if a.Runs < max(minRuns, 1) || a.Solved == 0 {
			continue
		}
		if best == nil || better(a, best) {
			best = a
		}
	}
	if best == nil {
		return Choice{}, false
	}
	why := fmt.Sprintf("solved %d of %d runs (%.0f%%, 95%% interval %.0f%%–%.0f%%)", best.Solved, best.Runs, 100*best.Rate,
		100*best.Low, 100*best.High)
	if best.CostUSD > 0 {
		why += fmt.Sprintf(" at $%.4f a run: %.2f solved per dollar", best.CostUSD/float64(best.Runs), perDollar(best))
	} else {
		why += " at no cost ace could price"
	}
	return Choice{Agent: best.Agent, Why: why}, true
}
