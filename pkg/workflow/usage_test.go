package workflow

import (
	"math"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/headless"
	"github.com/aceworks/ace/pkg/store"
)

func TestTurnUsageIsSummedAndPriced(t *testing.T) {
	t.Parallel()
	e := &Engine{cfg: config.Default()}
	r := &store.Run{State: store.RunState{Model: "gpt-5"}}
	// A reported cost (claude) is taken as it is.
	e.addTurnUsage(r, &headless.Status{Usage: headless.Usage{InputTokens: 100, OutputTokens: 10, CachedTokens: 1000,
		CacheWriteTokens: 50, CostUSD: 0.5}})
	// No reported cost (codex): priced at gpt-5's default, 1.25 in, 10 out, 0.125 cached per million.
	e.addTurnUsage(r, &headless.Status{Usage: headless.Usage{InputTokens: 1_000_000, OutputTokens: 100_000, CachedTokens: 2_000_000}})
	e.addTurnUsage(r, &headless.Status{}) // a turn that reported nothing changes nothing
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
	e.addTurnUsage(r2, &headless.Status{Usage: headless.Usage{InputTokens: 500_000}})
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
