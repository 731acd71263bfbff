package eval

import (
	"fmt"
	"math"
	"slices"
)

// Comparison is agent B against agent A of one report — a new release of a CLI against the one before it (ace eval
// report --compare claude@2.1.331,claude@2.1.332): what changed in solve rate, cost and time, and on which tasks.
type Comparison struct {
	A AgentStats `json:"a"`
	B AgentStats `json:"b"`
	// RateDiff is B's solve rate minus A's, with its 95% interval [RateLow, RateHigh]: Newcombe's hybrid score
	// interval, made of each rate's Wilson interval (sound at 0 or n of n, unlike the normal approximation).
	RateDiff float64 `json:"solve_rate_diff"`
	RateLow  float64 `json:"solve_rate_diff_low"`
	RateHigh float64 `json:"solve_rate_diff_high"`
	// CostPerRunA and CostPerRunB are the mean cost of a scored run; CostDiff B's minus A's.
	CostPerRunA float64 `json:"cost_per_run_a_usd"`
	CostPerRunB float64 `json:"cost_per_run_b_usd"`
	CostDiff    float64 `json:"cost_per_run_diff_usd"`
	// MedianDiff is B's median wall time minus A's, in seconds.
	MedianDiff float64 `json:"median_seconds_diff"`
	// Tasks are those where the two solved a different share of their runs (a task only one of them ran too).
	Tasks []TaskDiff `json:"tasks"`
}

// TaskDiff is one task on which two agents differ.
type TaskDiff struct {
	InstanceID string `json:"instance_id"`
	SolvedA    int    `json:"solved_a"`
	RunsA      int    `json:"runs_a"`
	SolvedB    int    `json:"solved_b"`
	RunsB      int    `json:"runs_b"`
}

// Compare is agent b against agent a, both as the report names them; an agent the report does not have is an
// error naming those it has.
func (rep Report) Compare(a, b string) (Comparison, error) {
	find := func(name string) (AgentStats, error) {
		i := slices.IndexFunc(rep.Agents, func(s AgentStats) bool { return s.Agent == name })
		if i < 0 {
			var have []string
			for _, s := range rep.Agents {
				have = append(have, s.Agent)
			}
			return AgentStats{}, fmt.Errorf("no agent %q in the results (they have %v)", name, have)
		}
		return rep.Agents[i], nil
	}
	var c Comparison
	var err error
	if c.A, err = find(a); err != nil {
		return c, err
	}
	if c.B, err = find(b); err != nil {
		return c, err
	}
	c.RateDiff, c.RateLow, c.RateHigh = newcombe(c.A, c.B)
	c.CostPerRunA, c.CostPerRunB = perRun(c.A), perRun(c.B)
	c.CostDiff = c.CostPerRunB - c.CostPerRunA
	c.MedianDiff = c.B.MedianSeconds - c.A.MedianSeconds
	for _, t := range rep.Tasks {
		d := TaskDiff{InstanceID: t.InstanceID, SolvedA: t.Solved[a], RunsA: t.Runs[a], SolvedB: t.Solved[b], RunsB: t.Runs[b]}
		if d.RunsA == 0 && d.RunsB == 0 {
			continue
		}
		if d.RunsA == 0 || d.RunsB == 0 || d.SolvedA*d.RunsB != d.SolvedB*d.RunsA {
			c.Tasks = append(c.Tasks, d)
		}
	}
	if c.Tasks == nil {
		c.Tasks = []TaskDiff{}
	}
	return c, nil
}

// newcombe is b's solve rate minus a's and its 95% interval (Newcombe 1998, method 10).
func newcombe(a, b AgentStats) (diff, low, high float64) {
	diff = b.Rate - a.Rate
	low = diff - math.Sqrt(sq(b.Rate-b.Low)+sq(a.High-a.Rate))
	high = diff + math.Sqrt(sq(b.High-b.Rate)+sq(a.Rate-a.Low))
	return diff, math.Max(-1, low), math.Min(1, high)
}

func sq(x float64) float64 { return x * x }

func perRun(s AgentStats) float64 {
	if s.Runs == 0 {
		return 0
	}
	return s.CostUSD / float64(s.Runs)
}
