package workflow

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
)

// spending is what the agents spent (this file: their usage, read from their records and their turns) and the
// budgets that bound it (budget.go).
type spending struct {
	core  spendingCore
	store spendingStore
	agent *runAgent
	cfg   *config.Config // budgets, prices, the trigger's label
	root  string         // workspace.root: the agents' homes, where their CLIs keep their sessions
	now   func() time.Time
	log   *slog.Logger

	mu        sync.Mutex
	usageRead map[int64]time.Time // when each run's agent's own usage records were last read (refreshUsage)
}

// spendingCore is what spending needs of the engine's core: the run's events and runner, its record of files
// ace refused, and a best-of parent's attempts.
type spendingCore interface {
	event(ctx context.Context, r *store.Run, kind EventKind, msg string)
	runner(r *store.Run) Runner
	noteRefusal(ctx context.Context, r *store.Run, err error) bool
	attemptRuns(ctx context.Context, bo *store.BestOfState) ([]*store.Run, error)
}

// spendingStore is the store as spending reads it: a best-of parent, and today's runs.
type spendingStore interface {
	GetRun(ctx context.Context, id int64) (*store.Run, error)
	ListRuns(ctx context.Context, f store.Filter) ([]*store.Run, error)
}

// addTurn adds what one turn spent, as the agent reported it (headless and live runs), to the run's usage. Its
// cost is the one the agent reported (claude); else it is priced with model's price ([prices], built-in
// defaults; the run's model when the agent did not say).
func (sp *spending) addTurn(r *store.Run, u store.Usage, model string) {
	if u == (store.Usage{}) {
		return
	}
	if r.State.Usage == nil {
		r.State.Usage = &store.Usage{}
	}
	if u.CostUSD == 0 {
		if model == "" {
			model = sp.runModel(r)
		}
		if p, ok := sp.cfg.PriceOf(model); ok {
			u.CostUSD = p.Cost(u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens)
		}
	}
	r.State.Usage.Add(u)
}

// usageReader is a Runner whose agent keeps its own record of what it spent, read after the fact: the tmux
// runner (its CLI's session files). The headless runner counts each turn as it ends instead (addTurnUsage).
type usageReader interface {
	readUsage(ctx context.Context, r *store.Run)
}

// sessionUsageEvery bounds how often the monitor reads a tmux run's session files: `ace ls` shows a figure at
// most this old.
const sessionUsageEvery = 30 * time.Second

// refreshUsage brings the run's usage up to date from its agent's own records, where its runner has them: at
// most every sessionUsageEvery per run, or now when force (the run ends, a status comment is written).
func (sp *spending) refreshUsage(ctx context.Context, r *store.Run, force bool) {
	rd, ok := sp.core.runner(r).(usageReader)
	if !ok {
		return
	}
	now := sp.now()
	sp.mu.Lock()
	if sp.usageRead == nil {
		sp.usageRead = map[int64]time.Time{}
	}
	last, read := sp.usageRead[r.ID]
	due := force || !read || now.Sub(last) >= sessionUsageEvery
	if due {
		sp.usageRead[r.ID] = now
	}
	sp.mu.Unlock()
	if due {
		rd.readUsage(ctx, r)
	}
}

// sessionUsage sets the run's usage to what its agent's sessions in the working copy spent since the run was
// created, read from the session files the CLI wrote in the agent's home (agents.Profile.SessionUsage). The
// files hold totals, so the figure replaces the one before: reading again never counts anything twice. The
// cost is the one the files record, else the tokens are priced by model ([prices], built-in defaults; a model
// without a price at the run's model's). An agent whose files ace cannot read, or that wrote none yet, leaves
// the usage as it is.
func (sp *spending) sessionUsage(ctx context.Context, r *store.Run) {
	prof, err := sp.agent.profile(r)
	if err != nil || r.Workdir == "" {
		return
	}
	home := agents.AgentHome(prof, sp.root, agents.CurrentUser())
	if b := r.State.Box; b != nil && b.Proxy != "" && b.Home != "" {
		home = agents.UserEnv{Home: b.Home, Box: true} // a boxed agent's CLI keeps its sessions in its home for the run
	}
	u, err := prof.SessionUsage(home, r.Workdir, r.CreatedAt)
	for _, refused := range u.Refused {
		sp.core.noteRefusal(ctx, r, refused)
	}
	if err != nil {
		if !errors.Is(err, agents.ErrNoSessionUsage) && !sp.core.noteRefusal(ctx, r, err) {
			sp.log.WarnContext(ctx, "read the agent's session usage", "run", r.ID, "err", err)
		}
		return
	}
	if u.Sessions == 0 {
		return
	}
	r.State.Usage = withEarlierAgents(r, &store.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens,
		CostUSD: sp.sessionCost(r, u)}) // and the agents before it (withEarlierAgents)
}

// sessionCost is what a session usage cost: as the files recorded it, else priced model by model (in a fixed
// order, so that the same usage always sums to the same figure).
func (sp *spending) sessionCost(r *store.Run, u agents.Usage) float64 {
	if u.CostUSD > 0 {
		return u.CostUSD
	}
	models := make([]string, 0, len(u.Models))
	for m := range u.Models {
		models = append(models, m)
	}
	slices.Sort(models)
	cost := 0.0
	for _, m := range models {
		p, ok := sp.cfg.PriceOf(m)
		if !ok {
			p, ok = sp.cfg.PriceOf(sp.runModel(r))
		}
		if ok {
			t := u.Models[m]
			cost += p.Cost(t.InputTokens, t.OutputTokens, t.CacheReadTokens, t.CacheWriteTokens)
		}
	}
	return cost
}

// runModel is the model the run's agent uses: the one asked for, else its profile's.
func (sp *spending) runModel(r *store.Run) string {
	if r.State.Model != "" {
		return r.State.Model
	}
	if prof, err := sp.agent.profile(r); err == nil {
		return prof.Model
	}
	return ""
}

// withEarlierAgents is u, what the run's current agent spent by its own records, plus what the agents before it
// spent (the usage at the last handover); u itself when the run never fell back.
func withEarlierAgents(r *store.Run, u *store.Usage) *store.Usage {
	h, ok := r.State.Fallback.Last()
	if !ok || h.Usage == nil {
		return u
	}
	sum := *h.Usage
	sum.Add(*u)
	return &sum
}
