package workflow

import (
	"github.com/aceworks/ace/pkg/headless"
	"github.com/aceworks/ace/pkg/store"
)

// What the runners give spending (usage.go): the headless runner each turn's usage as its agent reported it; the
// tmux and the live runner their CLIs' own records, read after the fact (usageReader).

var (
	_ usageReader = (*tmuxRunner)(nil)
	_ usageReader = (*liveRunner)(nil)
)

// addTurnUsage adds what a headless turn spent, as the agent reported it, to the run's usage (addTurn).
func (x *execRunner) addTurnUsage(r *store.Run, st *headless.Status) {
	if st == nil || st.Usage == (headless.Usage{}) {
		return
	}
	x.spend.addTurn(r, st.Usage.Usage, st.Usage.Model)
}
