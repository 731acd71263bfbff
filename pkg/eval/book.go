package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// Book keeps an eval's items and results: the eval directory's plan.json and results/ for one host (fileBook,
// the default), or the fleet's shared store (SharedBook), through which the hosts running one eval split its
// items — each taken by one host at a time — and every host's ace eval report reads them all.
type Book interface {
	// Number gives each of items (a task, an agent, a run) its number: the one the book has, else a new one.
	Number(ctx context.Context, items []Item) ([]Item, error)
	// Hold makes item n this host's to run until release is called: false when it has a result or another
	// host holds it.
	Hold(ctx context.Context, n int) (release func(), ok bool, err error)
	// Write keeps a result whole or not at all.
	Write(ctx context.Context, r RunResult) error
	// Results are the results kept, by item number.
	Results(ctx context.Context) (map[int]RunResult, error)
}

// fileBook is the eval directory's: one host runs its items (ace eval run holds the directory's lock).
type fileBook struct {
	dir  string
	plan *Plan
}

func (b *fileBook) Number(_ context.Context, items []Item) ([]Item, error) {
	out := make([]Item, len(items))
	for i, it := range items {
		out[i] = b.plan.Add(it.InstanceID, it.Agent, it.Run)
	}
	return out, b.plan.Save()
}

func (b *fileBook) Hold(context.Context, int) (func(), bool, error) { return func() {}, true, nil }

func (b *fileBook) Write(_ context.Context, r RunResult) error { return WriteResult(b.dir, r) }

func (b *fileBook) Results(context.Context) (map[int]RunResult, error) {
	rs, err := ReadResults(b.dir)
	if err != nil {
		return nil, err
	}
	out := make(map[int]RunResult, len(rs))
	for _, r := range rs {
		out[r.N] = r
	}
	return out, nil
}

// SharedStore is what a SharedBook keeps in the fleet's store (pkg/store's).
type SharedStore interface {
	EvalNumber(ctx context.Context, eval string, keys []string) (map[string]int, error)
	EvalTake(ctx context.Context, eval string, n int, host string, until time.Time) (bool, error)
	EvalScore(ctx context.Context, eval string, n int, host string, result []byte) (bool, error)
	EvalResults(ctx context.Context, eval string) (map[int][]byte, error)
}

// SharedBook keeps eval Name's items in the store a fleet's hosts share: a host holds an item under a lease it
// renews while it runs the item (every quarter of Lease), so that an item of a host that died goes to another
// once its lease has run out; a result is kept once, by the host that scored it first.
type SharedBook struct {
	Store  SharedStore
	Name   string // SharedName's
	Host   string
	Lease  time.Duration
	Logger *slog.Logger
}

// SharedName names the eval of repo in directory dir in a shared store: the hosts of a fleet that run the same
// repository's eval in directories of the same name share it.
func SharedName(repo, dir string) string { return repo + ":" + filepath.Base(dir) }

func (b *SharedBook) Number(ctx context.Context, items []Item) ([]Item, error) {
	keys := make([]string, len(items))
	for i, it := range items {
		keys[i] = it.Key()
	}
	ns, err := b.Store.EvalNumber(ctx, b.Name, keys)
	if err != nil {
		return nil, err
	}
	out := make([]Item, len(items))
	for i, it := range items {
		it.N = ns[it.Key()]
		if it.N <= 0 {
			return nil, fmt.Errorf("eval %s: item %s has no number", b.Name, it.Key())
		}
		out[i] = it
	}
	return out, nil
}

func (b *SharedBook) Hold(ctx context.Context, n int) (func(), bool, error) {
	ok, err := b.Store.EvalTake(ctx, b.Name, n, b.Host, time.Now().Add(b.Lease))
	if err != nil || !ok {
		return nil, false, err
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(max(b.Lease/4, 10*time.Millisecond))
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			// A renewal that fails leaves the lease to run out: another host may then take the item over, and
			// the result scored first is kept.
			if ok, err := b.Store.EvalTake(ctx, b.Name, n, b.Host, time.Now().Add(b.Lease)); err != nil || !ok {
				b.logger().WarnContext(ctx, "renew the lease of an eval item", "item", n, "held", ok, "err", err)
			}
		}
	}()
	return func() { close(done); wg.Wait() }, true, nil
}

func (b *SharedBook) Write(ctx context.Context, r RunResult) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	kept, err := b.Store.EvalScore(ctx, b.Name, r.N, b.Host, data)
	if err == nil && !kept {
		b.logger().WarnContext(ctx, "another host scored this eval item first: its result is kept", "item", r.N)
	}
	return err
}

func (b *SharedBook) Results(ctx context.Context) (map[int]RunResult, error) {
	return sharedResults(ctx, b.Store, b.Name)
}

// SharedResults is what reading a fleet's evals asks of its store (pkg/store's).
type SharedResults interface {
	EvalResults(ctx context.Context, eval string) (map[int][]byte, error)
}

// sharedResults are the results eval name keeps in a fleet's store, by item number.
func sharedResults(ctx context.Context, st SharedResults, name string) (map[int]RunResult, error) {
	raw, err := st.EvalResults(ctx, name)
	if err != nil {
		return nil, err
	}
	out := make(map[int]RunResult, len(raw))
	for n, data := range raw {
		var r RunResult
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, fmt.Errorf("eval %s: the result of item %d: %w", name, n, err)
		}
		if r.N != n {
			return nil, fmt.Errorf("eval %s: item %d holds the result of item %d", name, n, r.N)
		}
		out[n] = r
	}
	return out, nil
}

// ReadEval reads the results of repo's eval in directory dir, in the items' order: with a fleet's store (shared
// not nil: the store is on PostgreSQL), those every host of the fleet kept there (SharedBook's) — unless it has
// none, as for an eval run on this host before its store was shared: then, as on one host, the directory's files.
// It is the one reader of an eval's results: ace eval report's, agent.default = "auto"'s and the dashboard's.
func ReadEval(ctx context.Context, shared SharedResults, repo, dir string) ([]RunResult, error) {
	if shared != nil {
		m, err := sharedResults(ctx, shared, SharedName(repo, dir))
		if err != nil {
			return nil, err
		}
		if len(m) > 0 {
			out := make([]RunResult, 0, len(m))
			for _, r := range m {
				out = append(out, r)
			}
			slices.SortFunc(out, func(a, b RunResult) int { return a.N - b.N })
			return out, nil
		}
	}
	return ReadResults(dir)
}

func (b *SharedBook) logger() *slog.Logger {
	if b.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return b.Logger
}
