package store

import (
	"context"
	"testing"
	"time"
)

func TestPruneFinishedRuns(t *testing.T) { forEachBackend(t, testPruneFinishedRuns) }

// testPruneFinishedRuns: runs that finished before the cutoff go with their events, in more than one batch; runs
// finished since, and unfinished runs however old, stay.
func testPruneFinishedRuns(t *testing.T, fresh func(*testing.T) target) {
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0)
	s := openAt(t, fresh(t), WithClock(func() time.Time { return now }))
	old, recent := now.Add(-40*24*time.Hour), now.Add(-time.Hour)
	add := func(issue int, status Status, finished *time.Time) *Run {
		r := &Run{Repo: "acme/widgets", Issue: issue, Attempt: 1, Agent: "fake", Step: "claim", Status: StatusActive}
		if err := s.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
		r.Status, r.FinishedAt = status, finished
		if err := s.UpdateRun(ctx, r, &Event{Kind: "step", Message: "moved"}); err != nil {
			t.Fatal(err)
		}
		return r
	}
	const pruned = pruneBatch + 3
	for i := range pruned {
		add(1000+i, []Status{StatusDone, StatusFailed, StatusCancelled, StatusClosed}[i%4], &old)
	}
	kept := []*Run{add(1, StatusDone, &recent), add(2, StatusActive, nil), add(3, StatusWaitingInput, nil)}

	n, err := s.Prune(ctx, now.Add(-30*24*time.Hour))
	if err != nil || n != pruned {
		t.Fatalf("pruned %d (%v), want %d", n, err, pruned)
	}
	runs, err := s.ListRuns(ctx, Filter{})
	if err != nil || len(runs) != len(kept) {
		t.Fatalf("%d runs left (%v), want %d", len(runs), err, len(kept))
	}
	for _, r := range kept {
		if evs, err := s.Events(ctx, r.ID); err != nil || len(evs) == 0 {
			t.Fatalf("run %d lost its events (%v)", r.ID, err)
		}
	}
	var orphans int
	if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM events WHERE run_id NOT IN (SELECT id FROM runs)").Scan(&orphans); err != nil || orphans != 0 {
		t.Fatalf("%d events of pruned runs left (%v)", orphans, err)
	}
	if n, err := s.Prune(ctx, now.Add(-30*24*time.Hour)); err != nil || n != 0 {
		t.Fatalf("a second prune deleted %d (%v)", n, err)
	}
}
