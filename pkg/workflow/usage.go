package workflow

import (
	"fmt"

	"github.com/aceworks/ace/pkg/headless"
	"github.com/aceworks/ace/pkg/store"
)

// addTurnUsage adds what a headless turn spent, as the agent reported it, to the run's usage. Its cost is the
// one the agent reported (claude); else it is priced with the model's price ([prices], built-in defaults).
func (e *Engine) addTurnUsage(r *store.Run, st *headless.Status) {
	if st == nil || st.Usage == (headless.Usage{}) {
		return
	}
	u := st.Usage
	if r.State.Usage == nil {
		r.State.Usage = &store.Usage{}
	}
	ru := r.State.Usage
	ru.InputTokens += u.InputTokens
	ru.OutputTokens += u.OutputTokens
	ru.CacheReadTokens += u.CachedTokens
	ru.CacheWriteTokens += u.CacheWriteTokens
	cost := u.CostUSD
	if cost == 0 {
		model := u.Model
		if model == "" {
			model = e.runModel(r)
		}
		if p, ok := e.cfg.PriceOf(model); ok {
			cost = p.Cost(u.InputTokens, u.OutputTokens, u.CachedTokens, u.CacheWriteTokens)
		}
	}
	ru.CostUSD += cost
}

// runModel is the model the run's agent uses: the one asked for, else its profile's.
func (e *Engine) runModel(r *store.Run) string {
	if r.State.Model != "" {
		return r.State.Model
	}
	if prof, err := e.profile(r); err == nil {
		return prof.Model
	}
	return ""
}

// UsageLine renders a run's usage for people: "12.3k tokens (10k in, 2.3k out, 40k cached) · $0.0123".
func UsageLine(u *store.Usage) string {
	if u == nil {
		return ""
	}
	return fmt.Sprintf("%s tokens (%s in, %s out, %s cache read, %s cache write) · $%.4f", kilo(u.Tokens()),
		kilo(u.InputTokens), kilo(u.OutputTokens), kilo(u.CacheReadTokens), kilo(u.CacheWriteTokens), u.CostUSD)
}

func kilo(n int64) string {
	if n < 1000 {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%.1fk", float64(n)/1000)
}
