package eval

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/aceworks/ace/pkg/usage"
)

// TestWilsonInterval: the 95% Wilson score interval as the literature gives it (Newcombe 1998, method 3),
// within [0, 1] at the edges, and [0, 1] when nothing ran.
func TestWilsonInterval(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		k, n      int
		low, high float64
	}{{0, 10, 0, 0.2775}, {5, 10, 0.2366, 0.7634}, {10, 10, 0.7225, 1}, {81, 263, 0.2553, 0.3662}, {0, 0, 0, 1}} {
		low, high := Wilson(c.k, c.n)
		if math.Abs(low-c.low) > 5e-4 || math.Abs(high-c.high) > 5e-4 {
			t.Errorf("Wilson(%d, %d) = [%.4f, %.4f], want [%.4f, %.4f]", c.k, c.n, low, high, c.low, c.high)
		}
	}
}

// TestSummarizeByAgentAndTask: the solve rate of each agent over its scored runs (a run that does not count is
// left out, and counted as such), the cost over the tasks solved, the median wall time, and per task who solved
// it how often.
func TestSummarizeByAgentAndTask(t *testing.T) {
	t.Parallel()
	res := func(task, agent string, run int, solved bool, cost, secs float64) RunResult {
		return RunResult{Item: Item{InstanceID: task, Agent: agent, Run: run}, Repo: "acme/calc", Solved: solved,
			Usage: usage.Usage{InputTokens: 100, OutputTokens: 10, CostUSD: cost}, WallSeconds: secs, CLIVersion: "1.0"}
	}
	bad := res("t2", "b", 2, true, 9, 9)
	bad.Invalid = "b ran release \"1.0\", not 2.0"
	rep := Summarize([]RunResult{
		res("t1", "a", 1, true, 1, 10), res("t1", "a", 2, false, 1, 30), res("t2", "a", 1, true, 2, 20),
		res("t1", "b", 1, false, 0.5, 5), res("t2", "b", 1, false, 0.5, 7), bad,
	})
	if len(rep.Agents) != 2 || rep.Runs != 6 || rep.Repo != "acme/calc" {
		t.Fatalf("report %+v", rep)
	}
	a, b := rep.Agents[0], rep.Agents[1]
	if a.Agent != "a" || a.Runs != 3 || a.Solved != 2 || math.Abs(a.Rate-2.0/3) > 1e-9 || a.CostPerSolved == nil ||
		*a.CostPerSolved != 2 || a.MedianSeconds != 20 || a.Tokens != 330 || !slices.Equal(a.CLIVersions, []string{"1.0"}) {
		t.Errorf("agent a: %+v", a)
	}
	if lo, hi := Wilson(2, 3); a.Low != lo || a.High != hi {
		t.Errorf("agent a's interval [%v, %v], want Wilson(2, 3)", a.Low, a.High)
	}
	if b.Runs != 2 || b.Solved != 0 || b.NotScored != 1 || b.CostPerSolved != nil || b.CostUSD != 1 || b.MedianSeconds != 6 {
		t.Errorf("agent b: %+v", b)
	}
	if len(rep.Tasks) != 2 || rep.Tasks[0].InstanceID != "t1" || !slices.Equal(rep.Tasks[0].SolvedBy, []string{"a"}) ||
		rep.Tasks[0].Solved["a"] != 1 || rep.Tasks[0].Runs["a"] != 2 || rep.Tasks[1].Runs["b"] != 1 {
		t.Errorf("tasks %+v", rep.Tasks)
	}
}

// TestBestIsTheMostSolvedPerDollar: among the agents with enough scored runs that solved something, the one with
// the best solve rate over the mean cost of a run — not the best solve rate — and one whose runs cost nothing ace
// could price before any that cost something; too few runs, or none solved, and no agent is chosen.
func TestBestIsTheMostSolvedPerDollar(t *testing.T) {
	t.Parallel()
	var rs []RunResult
	add := func(agent string, runs, solved int, costPerRun float64) {
		for i := range runs {
			rs = append(rs, RunResult{Item: Item{InstanceID: fmt.Sprintf("t%d", i), Agent: agent, Run: 1}, Solved: i < solved,
				Usage: usage.Usage{CostUSD: costPerRun}, WallSeconds: 10})
		}
	}
	add("dear", 10, 5, 1.0)    // 0.5 solved per dollar
	add("cheap", 10, 4, 0.2)   // 2 per dollar
	add("few", 3, 3, 0.01)     // too few runs
	add("useless", 10, 0, 0.0) // solved nothing
	c, ok := Summarize(rs).Best(5)
	if !ok || c.Agent != "cheap" || !strings.Contains(c.Why, "solved 4 of 10 runs (40%") || !strings.Contains(c.Why, "2.00 solved per dollar") {
		t.Errorf("best %+v, %v; want cheap", c, ok)
	}
	if c, _ := Summarize(rs).Best(3); c.Agent != "few" {
		t.Errorf("with 3 runs enough, best is %s, want few", c.Agent)
	}
	add("unpriced", 10, 2, 0)
	if c, _ := Summarize(rs).Best(5); c.Agent != "unpriced" || !strings.Contains(c.Why, "no cost ace could price") {
		t.Errorf("best %+v, want the agent whose runs cost nothing ace knows of", c)
	}
	if c, ok := Summarize(rs[23:33]).Best(5); ok {
		t.Errorf("an agent that solved nothing was chosen: %+v", c)
	}
}
