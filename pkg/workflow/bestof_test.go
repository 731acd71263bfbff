package workflow

import (
	"testing"

	"github.com/aceworks/ace/pkg/store"
)

// TestBestJudgesVerifyThenChangeThenCost: verify passed beats a smaller change, a smaller change beats a cheaper
// one, the cheaper wins a tie of change, and an attempt that pushed nothing or did not end done never wins.
func TestBestJudgesVerifyThenChangeThenCost(t *testing.T) {
	t.Parallel()
	res := func(k int, verify string, lines int, cost float64) store.AttemptResult {
		return store.AttemptResult{K: k, Status: store.StatusDone, Pushed: true, Verify: verify, Lines: lines,
			Usage: &store.Usage{CostUSD: cost}}
	}
	unpushed := res(9, "passed", 1, 0)
	unpushed.Pushed = false
	failed := res(8, "passed", 1, 0)
	failed.Status = store.StatusFailed
	for _, c := range []struct {
		name string
		in   []store.AttemptResult
		want int
	}{
		{"verify first", []store.AttemptResult{res(1, "failed", 1, 0.1), res(2, "passed", 50, 0.9), res(3, "", 2, 0)}, 2},
		{"then the change", []store.AttemptResult{res(1, "passed", 9, 0.1), res(2, "passed", 5, 0.9)}, 2},
		{"then the cost", []store.AttemptResult{res(1, "passed", 5, 0.3), res(2, "passed", 5, 0.2), res(3, "passed", 5, 0.25)}, 2},
		{"a tie keeps the first", []store.AttemptResult{res(1, "", 5, 0), res(2, "", 5, 0)}, 1},
		{"no verify against a failed one", []store.AttemptResult{res(1, "failed", 1, 0), res(2, "", 3, 0)}, 1},
		{"pushed nothing, or failed", []store.AttemptResult{unpushed, failed, res(3, "failed", 40, 1)}, 3},
		{"none", []store.AttemptResult{unpushed, failed}, 0},
	} {
		if got := best(c.in); got != c.want {
			t.Errorf("%s: best = %d, want %d", c.name, got, c.want)
		}
	}
}
