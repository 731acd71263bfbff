package store

import (
	"context"
	"testing"
	"time"
)

// TestEvalItemsSharedByHosts: two hosts' stores on one database number an eval's items once (a key keeps its
// number, a new key gets the next); an item is taken by one host at a time, the holder renews its lease, another
// takes it over once the lease has run out; the first result is kept and the item is then no one's to take;
// another eval's items are apart; the evals named are those with a result.
func TestEvalItemsSharedByHosts(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fresh func(t *testing.T) target) {
		ctx := context.Background()
		g := fresh(t)
		now := time.Unix(1_800_000_000, 0)
		clock := func() time.Time { return now }
		a, b := openAt(t, g, WithClock(clock)), openAt(t, g, WithClock(clock))
		ns, err := a.EvalNumber(ctx, "acme/calc:run", []string{"t1/x/1", "t2/x/1"})
		if err != nil || ns["t1/x/1"] != 1 || ns["t2/x/1"] != 2 {
			t.Fatalf("numbered %v, %v", ns, err)
		}
		ns, err = b.EvalNumber(ctx, "acme/calc:run", []string{"t2/x/1", "t3/x/1"})
		if err != nil || ns["t2/x/1"] != 2 || ns["t3/x/1"] != 3 || len(ns) != 3 {
			t.Fatalf("numbered again %v, %v", ns, err)
		}
		if ns, err := b.EvalNumber(ctx, "other:run", []string{"t9/x/1"}); err != nil || ns["t9/x/1"] != 1 || len(ns) != 1 {
			t.Fatalf("another eval: %v, %v", ns, err)
		}
		take := func(s *Store, host string, n int) bool {
			t.Helper()
			ok, err := s.EvalTake(ctx, "acme/calc:run", n, host, now.Add(10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		if !take(a, "alpha", 1) || take(b, "beta", 1) || !take(a, "alpha", 1) {
			t.Fatal("item 1: alpha takes it, beta may not, alpha renews it")
		}
		now = now.Add(11 * time.Second)
		if !take(b, "beta", 1) || take(a, "alpha", 1) {
			t.Fatal("item 1: beta takes it over once alpha's lease ran out, and alpha may not take it back")
		}
		if kept, err := b.EvalScore(ctx, "acme/calc:run", 1, "beta", []byte(`{"n":1,"by":"beta"}`)); err != nil || !kept {
			t.Fatalf("beta's result: %v, %v", kept, err)
		}
		if kept, err := a.EvalScore(ctx, "acme/calc:run", 1, "alpha", []byte(`{"n":1,"by":"alpha"}`)); err != nil || kept {
			t.Fatalf("alpha's later result: kept %v, %v", kept, err)
		}
		now = now.Add(time.Hour)
		if take(a, "alpha", 1) || take(b, "beta", 1) {
			t.Error("a scored item was taken")
		}
		rs, err := a.EvalResults(ctx, "acme/calc:run")
		if err != nil || len(rs) != 1 || string(rs[1]) != `{"n":1,"by":"beta"}` {
			t.Errorf("results %v, %v", rs, err)
		}
		if names, err := b.EvalNames(ctx); err != nil || len(names) != 1 || names[0] != "acme/calc:run" {
			t.Errorf("evals with results %v, %v; want acme/calc:run alone (other:run has none)", names, err)
		}
	})
}
