package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// waitingRuns creates n runs on host waiting for a slot, the first waiting longest.
func waitingRuns(t *testing.T, s *Store, host string, n int) []*Run {
	return runsHolding(t, s, host, n, SlotWait)
}

// runsHolding creates n runs on host holding slot, the first since longest.
func runsHolding(t *testing.T, s *Store, host string, n int, slot Slot) []*Run {
	t.Helper()
	base := time.Now().Add(-time.Hour)
	var out []*Run
	for i := range n {
		r := &Run{Repo: "o/r", Issue: i + 1, Attempt: 1, Agent: "x", Step: "claim", Status: StatusActive, Host: host,
			Slot: slot, SlotAt: base.Add(time.Duration(i) * time.Second)}
		if err := s.CreateRun(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func take(t *testing.T, s *Store, r *Run, capacity int) SlotTake {
	t.Helper()
	got, err := s.TakeSlot(context.Background(), r, capacity)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestSlotsGoToWorkAndIdleAgentsGiveWay: slots go to the runs waiting in the order they began to wait; a run that
// goes idle keeps its slot until one waits, then is marked to give way (the longest idle first) to the run that
// marked it, and anyone's to stop once EvictGrace has passed (a crash); its slot goes to the run waiting once it
// is freed; an idle agent goes back to work in its own slot. Nothing but TakeSlot gives a working slot, and a run
// that moves to another host leaves its slot behind.
func TestSlotsGoToWorkAndIdleAgentsGiveWay(t *testing.T) { forEachBackend(t, testSlotsGoToWork) }

func testSlotsGoToWork(t *testing.T, fresh func(*testing.T) target) {
	ctx := context.Background()
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s := openAt(t, fresh(t), WithClock(clock))
	rs := waitingRuns(t, s, "h", 4)
	a, b, c, d := rs[0], rs[1], rs[2], rs[3]
	if got := take(t, s, a, 2); !got.Granted || got.Was != SlotWait {
		t.Fatalf("a: %+v, want a slot", got)
	}
	if got := take(t, s, c, 2); got.Granted || got.Ahead != 1 || len(got.Evict) != 0 {
		t.Fatalf("c took b's turn: %+v", got)
	}
	if got := take(t, s, b, 2); !got.Granted {
		t.Fatalf("b: %+v, want the second slot", got)
	}
	if ok, err := s.SetSlot(ctx, a, SlotIdle, SlotWork); !ok || err != nil {
		t.Fatalf("a goes idle: %v %v", ok, err)
	}
	if ok, err := s.SetSlot(ctx, b, SlotIdle, SlotWork); !ok || err != nil {
		t.Fatalf("b goes idle: %v %v", ok, err)
	}
	// c and d wait: the host's two agents are idle, a the longest: it gives way first, then b.
	got := take(t, s, c, 2)
	if got.Granted || len(got.Evict) != 1 || got.Evict[0].ID != a.ID || got.Live != 2 {
		t.Fatalf("c: %+v, want a to give way", got)
	}
	if got := take(t, s, d, 2); got.Granted || len(got.Evict) != 1 || got.Evict[0].ID != b.ID {
		t.Fatalf("d: %+v, want b to give way too", got)
	}
	if got := take(t, s, a, 2); !got.Evicted || got.Granted {
		t.Fatalf("a, asked to give way, took its slot back: %+v", got)
	}
	if got := take(t, s, c, 2); got.Granted || len(got.Evict) != 0 {
		t.Fatalf("c got a slot before a's agent was stopped, or was given a and b to stop again: %+v", got)
	}
	mu.Lock()
	now = now.Add(EvictGrace + time.Second) // whoever marked them did not stop them: c does
	mu.Unlock()
	if got := take(t, s, c, 2); got.Granted || len(got.Evict) != 2 {
		t.Fatalf("c, EvictGrace later: %+v, want a and b to stop", got)
	}
	if ok, err := s.SetSlot(ctx, a, SlotNone, SlotEvict); !ok || err != nil {
		t.Fatalf("a's agent stopped: %v %v", ok, err)
	}
	if got := take(t, s, d, 2); got.Granted {
		t.Fatalf("d took the slot c waits for: %+v", got)
	}
	if got := take(t, s, c, 2); !got.Granted {
		t.Fatalf("c: %+v, want a's slot", got)
	}
	// b, marked, goes back to work: it may not; once stopped, d gets its slot. An idle agent does go back to work
	// in its own slot.
	if got := take(t, s, b, 2); !got.Evicted {
		t.Fatalf("b: %+v, want it to give way", got)
	}
	if ok, _ := s.SetSlot(ctx, b, SlotNone, SlotEvict); !ok {
		t.Fatal("b's slot not freed")
	}
	if got := take(t, s, d, 2); !got.Granted {
		t.Fatalf("d: %+v, want b's slot", got)
	}
	if ok, _ := s.SetSlot(ctx, d, SlotIdle, SlotWork); !ok {
		t.Fatal("d does not go idle")
	}
	if got := take(t, s, d, 2); !got.Granted || got.Was != SlotIdle {
		t.Fatalf("d back to work: %+v", got)
	}
	if _, err := s.SetSlot(ctx, a, SlotWork, SlotNone); err == nil {
		t.Fatal("SetSlot gave a working slot")
	}
	counts, err := s.Slots(ctx)
	if err != nil || counts["h"].Work != 2 || counts["h"].Live() != 2 || counts["h"].Free(2) != 0 {
		t.Fatalf("slots %+v, %v", counts, err)
	}

	// A move takes the slot it is given on its new host, in the same write; the old host's goes.
	fresh2, err := s.GetRun(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	fresh2.Host, fresh2.Slot, fresh2.SlotAt = "g", SlotWait, time.Now()
	if err := s.UpdateRun(ctx, fresh2, nil); err != nil {
		t.Fatal(err)
	}
	counts, _ = s.Slots(ctx)
	if counts["h"].Work != 1 || counts["g"].Wait != 1 {
		t.Fatalf("after the move: %+v", counts)
	}
	// An update on the same host leaves the slot as the store has it.
	fresh2.Slot = SlotWork
	if err := s.UpdateRun(ctx, fresh2, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetRun(ctx, c.ID); got.Slot != SlotWait {
		t.Fatalf("an update on the same host wrote the slot: %q", got.Slot)
	}
	// A run no longer on the host gets a conflict.
	stale := *c
	if _, err := s.TakeSlot(ctx, &stale, 2); !errors.Is(err, ErrConflict) {
		t.Fatalf("a moved run's take: %v", err)
	}
}

// TestSlotsAreNeverGivenTwice: twelve runs of a host with three slots, none waiting yet (released agents whose
// rounds came at once), ask for one at the same time, each through a store of its own (a process, a host): three
// get one.
func TestSlotsAreNeverGivenTwice(t *testing.T) { forEachBackend(t, testSlotsNeverTwice) }

func testSlotsNeverTwice(t *testing.T, fresh func(*testing.T) target) {
	g := fresh(t)
	s := openAt(t, g)
	rs := runsHolding(t, s, "h", 12, SlotNone)
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted := 0
	start := make(chan struct{})
	for _, r := range rs {
		other := openAt(t, g)
		wg.Go(func() {
			<-start
			got, err := other.TakeSlot(context.Background(), r, 3)
			if err != nil {
				t.Error(err)
				return
			}
			if got.Granted {
				mu.Lock()
				granted++
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	counts, err := s.Slots(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if granted != 3 || counts["h"].Work != 3 || counts["h"].Wait != 9 {
		t.Fatalf("%d granted, slots %+v: want 3 working, 9 waiting", granted, counts["h"])
	}
}

// TestMigrationGivesSlotsToLiveAgents: a store of schema version 4 gets slots: an unfinished run holds one for
// its agent, a followed pull request whose agent was released holds none and continues its conversation at its
// next round, a finished run none.
func TestMigrationGivesSlotsToLiveAgents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ace.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	v4 := &txn{handle: handle{q: tx, kind: SQLite}, tx: tx}
	for _, m := range migrations[:4] {
		if err := m(ctx, v4); err != nil {
			t.Fatal(err)
		}
	}
	for i, row := range []struct{ step, status, state string }{
		{"monitor", "active", `{}`},
		{"follow_pr", "active", `{"follow":{"released":true,"conversation_on":"h","waiting_slot":5,"rounds":1}}`},
		{"follow_pr", "active", `{"follow":{"rounds":1}}`},
		{"done", "done", `{}`},
	} {
		if _, err := v4.ExecContext(ctx, fmt.Sprintf(`INSERT INTO runs (repo, issue, attempt, agent, step, status, state,
			triggered_at, created_at, updated_at, host) VALUES ('o/r', %d, 1, 'x', ?, ?, ?, 1, 1, 7, 'h')`, i+1),
			row.step, row.status, row.state); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := v4.ExecContext(ctx, "PRAGMA user_version = 4"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s := open(t, path)
	var got []*Run
	for i := range 4 {
		r, err := s.LatestRun(ctx, "o/r", i+1)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	if got[0].Slot != SlotWork || got[0].SlotAt.UnixNano() != 7 || got[1].Slot != SlotNone || got[2].Slot != SlotWork || got[3].Slot != SlotNone {
		t.Fatalf("slots after the migration: %q %q %q %q", got[0].Slot, got[1].Slot, got[2].Slot, got[3].Slot)
	}
	if !got[1].State.Released || got[1].State.Follow == nil || got[1].State.Follow.Rounds != 1 || got[2].State.Released {
		t.Fatalf("the released run's state: %+v; the kept one's: %+v", got[1].State, got[2].State)
	}
}
