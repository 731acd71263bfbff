package eval

import (
	"math"
	"testing"

	"github.com/aceworks/ace/pkg/usage"
)

// TestCompareTwoReleases: B against A, the difference in solve rate with Newcombe's interval (his example: 56/70
// against 48/80 is +0.2000, 0.0524 to 0.3339), the cost of a run and the median time, and the tasks where they
// differ — not one both solved alike.
func TestCompareTwoReleases(t *testing.T) {
	t.Parallel()
	var results []RunResult
	add := func(agent, task string, n, solved int, cost, secs float64) {
		for i := range n {
			results = append(results, RunResult{Item: Item{InstanceID: task, Agent: agent, Run: i + 1}, Repo: "acme/calc",
				Solved: i < solved, WallSeconds: secs, Usage: usage.Usage{CostUSD: cost}})
		}
	}
	add("claude@2.1.331", "a", 40, 24, 0.01, 10)
	add("claude@2.1.331", "b", 40, 24, 0.01, 30)
	add("claude@2.1.332", "a", 35, 28, 0.02, 20)
	add("claude@2.1.332", "b", 35, 28, 0.02, 20)
	add("claude@2.1.332", "c", 1, 1, 0.02, 20)
	add("claude@2.1.331", "d", 2, 1, 0.01, 10)
	add("claude@2.1.332", "d", 4, 2, 0.02, 20)
	rep := Summarize(results)
	// Without c and d the rates are 48/80 and 56/70.
	base := Summarize(results[:150])
	c, err := base.Compare("claude@2.1.331", "claude@2.1.332")
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct {
		name      string
		got, want float64
	}{{"diff", c.RateDiff, 0.2}, {"low", c.RateLow, 0.0524}, {"high", c.RateHigh, 0.3339}, {"cost a", c.CostPerRunA, 0.01},
		{"cost diff", c.CostDiff, 0.01}, {"median diff", c.MedianDiff, 0}} {
		if math.Abs(x.got-x.want) > 5e-5 {
			t.Errorf("%s %.4f, want %.4f", x.name, x.got, x.want)
		}
	}
	if len(c.Tasks) != 2 || c.Tasks[0].InstanceID != "a" || c.Tasks[0].SolvedA != 24 || c.Tasks[0].RunsB != 35 {
		t.Errorf("tasks %+v", c.Tasks)
	}
	c, err = rep.Compare("claude@2.1.331", "claude@2.1.332")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Tasks) != 3 || c.Tasks[2].InstanceID != "c" || c.Tasks[2].RunsA != 0 {
		t.Errorf("tasks %+v: want a, b and c (run by one alone), not d (half of each)", c.Tasks)
	}
	if _, err := rep.Compare("claude@2.1.331", "claude@2.1.400"); err == nil {
		t.Error("an agent the results do not have was compared")
	}
}
