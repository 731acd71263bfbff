package eval

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/workspace"
)

// scriptedDriver ends each item's run as ends says, counting the runs it was asked for.
type scriptedDriver struct {
	ends  func(n int, agent string) (RunEnd, error)
	calls atomic.Int32
}

func (d *scriptedDriver) Drive(_ context.Context, _ string, n int, agent string) (RunEnd, error) {
	d.calls.Add(1)
	return d.ends(n, agent)
}

// TestRunScoresWhatIsLeftAndCountsOnlyRunsThatSayAnything: every task × agent × run is an item with a result of
// its own; a rerun drives only the items without one (an item whose run failed in ace goes again). A run that
// pushed nothing is unsolved ("no change"); one that ended before its agent had a turn, or whose CLI was not the
// release asked for, does not count.
func TestRunScoresWhatIsLeftAndCountsOnlyRunsThatSayAnything(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plan, err := LoadPlan(dir)
	if err != nil {
		t.Fatal(err)
	}
	set := &RunSet{Plan: plan, Tasks: map[string]*Task{"t1": {InstanceID: "t1", BaseCommit: "0123456789012345678901234567890123456789"},
		"t2": {InstanceID: "t2", BaseCommit: "0123456789012345678901234567890123456789"}}}
	rw, err := NewRunWorkspaces(dir, filepath.Join(dir, "no-mirror.git"), "main", set.Task, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	failOnce := true
	d := &scriptedDriver{ends: func(n int, agent string) (RunEnd, error) {
		it, _ := plan.Item(n)
		switch {
		case agent == "broken":
			return RunEnd{Status: "failed", Error: "prepare working copy: no space left", Started: now, Ended: now}, nil
		case it.InstanceID == "t2" && agent == "lazy" && failOnce:
			failOnce = false
			return RunEnd{}, errors.New("the store went away")
		case it.Agent == "lazy@2.0":
			return RunEnd{Status: "done", Turns: 1, CLIVersion: "1.0", Started: now, Ended: now.Add(time.Second)}, nil
		}
		return RunEnd{Status: "done", Turns: 2, Started: now, Ended: now.Add(3 * time.Second)}, nil
	}}
	o := RunOptions{Repo: "acme/calc", Dir: dir, Set: set, Runs: 1, Jobs: 2, Driver: d, Workspaces: rw,
		Agents: []AgentSpec{{Name: "lazy"}, {Name: "broken"}, {Name: "lazy", Version: "2.0"}}}
	sum, err := Run(context.Background(), o)
	if err == nil || sum.Items != 6 || len(sum.Results) != 5 || d.calls.Load() != 6 {
		t.Fatalf("first pass: %v, %d items, %d results, %d runs driven", err, sum.Items, len(sum.Results), d.calls.Load())
	}
	sum, err = Run(context.Background(), o)
	if err != nil || sum.Skipped != 5 || len(sum.Results) != 6 || d.calls.Load() != 7 {
		t.Fatalf("second pass: %v, %d skipped, %d results, %d runs driven in all", err, sum.Skipped, len(sum.Results), d.calls.Load())
	}
	results, err := ReadResults(dir)
	if err != nil || len(results) != 6 {
		t.Fatalf("%d results read: %v", len(results), err)
	}
	for _, r := range results {
		switch r.Agent {
		case "lazy":
			if r.Invalid != "" || r.Check != CheckNoChange || r.Solved || r.WallSeconds != 3 || r.Turns != 2 {
				t.Errorf("lazy on %s: %+v", r.InstanceID, r)
			}
		case "broken":
			if r.Invalid != "the run ended before its agent had a turn: prepare working copy: no space left" || r.Check != CheckNotScored {
				t.Errorf("broken on %s: invalid %q, check %s", r.InstanceID, r.Invalid, r.Check)
			}
		case "lazy@2.0":
			if r.Invalid != `lazy ran release "1.0", not 2.0` || r.Check != CheckNotScored {
				t.Errorf("lazy@2.0 on %s: invalid %q, check %s", r.InstanceID, r.Invalid, r.Check)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "plan.json")); err != nil {
		t.Errorf("the plan: %v", err)
	}
}
