package e2e_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/testkit"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
)

// TestPruneOldRuns: `ace poll` prunes, at start and every hour, the runs that finished longer than store.keep
// ago, with their events; a run that finished since stays.
func TestPruneOldRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var old, recent int64
	w := newPollingWorld(t, "hang\n", func(c *config.Config) {
		c.Store.Keep = config.Duration{Duration: 24 * time.Hour}
		c.GitHub.Repos = nil // nothing to dispatch: the runs below are the store's
		// The store as an earlier ace left it: one run finished 2 days ago, one an hour ago.
		root := c.Workspace.Root // absolute in a test world
		for i, ago := range []time.Duration{48 * time.Hour, time.Hour} {
			then := time.Now().Add(-ago)
			st, err := store.Open(ctx, filepath.Join(root, "ace.db"), store.WithClock(func() time.Time { return then }))
			if err != nil {
				t.Fatal(err)
			}
			r := &store.Run{Repo: testRepo, Issue: 500 + i, Attempt: 1, Agent: "fake", Step: "done", Status: store.StatusActive}
			if err := st.CreateRun(ctx, r); err != nil {
				t.Fatal(err)
			}
			r.Status, r.FinishedAt = store.StatusDone, &then
			if err := st.UpdateRun(ctx, r, &store.Event{Kind: "done"}); err != nil {
				t.Fatal(err)
			}
			st.Close()
			if i == 0 {
				old = r.ID
			} else {
				recent = r.ID
			}
		}
	})
	testkit.WaitFor(w.t, "the old run is pruned", 20*time.Second, func() bool {
		_, err := w.svc.Store.GetRun(ctx, old)
		return err != nil
	})
	if evs, err := w.svc.Store.Events(ctx, old); err != nil || len(evs) != 0 {
		t.Fatalf("the pruned run's events: %d (%v)", len(evs), err)
	}
	if _, err := w.svc.Store.GetRun(ctx, recent); err != nil {
		t.Fatalf("the run finished an hour ago: %v", err)
	}
}
