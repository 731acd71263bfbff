package workflow

import (
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/headless"
	"github.com/aceworks/ace/pkg/store"
)

func TestTurnUsageIsSummedAndPriced(t *testing.T) {
	t.Parallel()
	e := withParts(&Engine{cfg: config.Default()})
	r := &store.Run{State: store.RunState{Model: "gpt-5"}}
	// A reported cost (claude) is taken as it is.
	e.exec.addTurnUsage(r, &headless.Status{Usage: headless.Usage{Usage: store.Usage{InputTokens: 100, OutputTokens: 10,
		CacheReadTokens: 1000, CacheWriteTokens: 50, CostUSD: 0.5}}})
	// No reported cost (codex): priced at gpt-5's default, 1.25 in, 10 out, 0.125 cached per million.
	e.exec.addTurnUsage(r, &headless.Status{Usage: headless.Usage{Usage: store.Usage{InputTokens: 1_000_000, OutputTokens: 100_000,
		CacheReadTokens: 2_000_000}}})
	e.exec.addTurnUsage(r, &headless.Status{}) // a turn that reported nothing changes nothing
	u := r.State.Usage
	want := store.Usage{InputTokens: 1_000_100, OutputTokens: 100_010, CacheReadTokens: 2_001_000, CacheWriteTokens: 50}
	got := *u
	got.CostUSD = 0
	if got != want {
		t.Errorf("usage %+v, want %+v", got, want)
	}
	if wantCost := 0.5 + 1.25 + 1 + 0.25; math.Abs(u.CostUSD-wantCost) > 1e-9 {
		t.Errorf("cost %v, want %v", u.CostUSD, wantCost)
	}
	// A configured price replaces the default.
	e.cfg.Prices = map[string]config.Price{"gpt-5": {Input: 2}}
	r2 := &store.Run{State: store.RunState{Model: "gpt-5"}}
	e.exec.addTurnUsage(r2, &headless.Status{Usage: headless.Usage{Usage: store.Usage{InputTokens: 500_000}}})
	if r2.State.Usage.CostUSD != 1 {
		t.Errorf("cost with a configured price %v, want 1", r2.State.Usage.CostUSD)
	}
}

func TestLimitBackoff(t *testing.T) {
	t.Parallel()
	for pauses, want := range []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 10 * time.Minute, 10 * time.Minute} {
		if got := limitBackoff(time.Minute, 10*time.Minute, pauses); got != want {
			t.Errorf("backoff after %d pauses = %s, want %s", pauses, got, want)
		}
	}
}

// TestSessionUsageOfATmuxRun reads a tmux run's usage from its agent's session files (claude's, as recorded
// in pkg/agents/testdata/sessions): the totals replace the run's usage, so reading again counts nothing twice;
// tokens of a model without a price are priced at the run's model's. The monitor reads at most every 30 s,
// the end of a run at once; a headless run keeps its own count.
func TestSessionUsageOfATmuxRun(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	recorded := filepath.Join("..", "agents", "testdata", "sessions", "claude-2.1.197", "home")
	if err := os.CopyFS(filepath.Join(root, "homes", "claude"), os.DirFS(recorded)); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 24, 2, 0, 0, 0, time.UTC)
	e := withParts(&Engine{cfg: config.Default(), log: slog.New(slog.DiscardHandler), o: Options{Root: root,
		Now: func() time.Time { return now },
		Profile: func(name string) (agents.Profile, error) {
			p, _ := agents.Builtin(name)
			p.Home = "isolated"
			return p, nil
		}}})
	r := &store.Run{ID: 1, Agent: "claude", Runner: "tmux", Workdir: "/home/user/project",
		State: store.RunState{Model: "opus"}}
	// What the model server billed for the recorded conversation (claude-opus-4-8: no price of its own).
	want := store.Usage{InputTokens: 27782, OutputTokens: 39, CacheReadTokens: 37037, CacheWriteTokens: 9258}
	opus, _ := e.cfg.PriceOf("opus")
	want.CostUSD = opus.Cost(want.InputTokens, want.OutputTokens, want.CacheReadTokens, want.CacheWriteTokens)
	for range 2 {
		e.spend.refreshUsage(t.Context(), r, true)
		if r.State.Usage == nil || *r.State.Usage != want {
			t.Fatalf("usage %+v, want %+v", r.State.Usage, want)
		}
	}
	if want.CostUSD < 0.5 {
		t.Errorf("cost %v: the price was not applied", want.CostUSD)
	}

	// The monitor's look within 30 s of the last read does not read again; one after does.
	r.State.Usage = nil
	now = now.Add(29 * time.Second)
	e.spend.refreshUsage(t.Context(), r, false)
	if r.State.Usage != nil {
		t.Errorf("read again after 29 s: %+v", r.State.Usage)
	}
	now = now.Add(time.Second)
	e.spend.refreshUsage(t.Context(), r, false)
	if r.State.Usage == nil || *r.State.Usage != want {
		t.Errorf("after 30 s: %+v, want %+v", r.State.Usage, want)
	}

	// Sessions from before the run (an earlier attempt in the same working copy) are not this run's.
	r2 := &store.Run{ID: 2, Agent: "claude", Runner: "tmux", Workdir: "/home/user/project", CreatedAt: now}
	e.spend.refreshUsage(t.Context(), r2, true)
	if r2.State.Usage != nil {
		t.Errorf("a later run: %+v, want no usage", r2.State.Usage)
	}
	// A headless run's usage is its turns' (addTurnUsage): the session files do not replace it.
	ex := &store.Run{ID: 3, Agent: "claude", Runner: "exec", Workdir: "/home/user/project",
		State: store.RunState{Usage: &store.Usage{OutputTokens: 1}}}
	e.spend.refreshUsage(t.Context(), ex, true)
	if *ex.State.Usage != (store.Usage{OutputTokens: 1}) {
		t.Errorf("a headless run's usage became %+v", ex.State.Usage)
	}
}
