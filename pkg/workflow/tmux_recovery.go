package workflow

import (
	"context"
	"time"

	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tmuxops"
)

// TmuxRecovered records what the tmux client ended of dead ace processes' (tmuxops.WithRecovered): a warning in
// the log, and, when they had left the server unusable, a tmux event on each unfinished run of this host
// whose agent lived on that server (the tmux and live runners): its session went with the server, and the
// monitor starts the agent again on the fresh one.
func (e *Engine) TmuxRecovered(rec tmuxops.Recovery) {
	e.log.Warn("tmux: " + rec.String())
	if !rec.Unusable {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	runs, err := e.o.Store.ListRuns(ctx, store.Filter{Host: e.o.Host, Statuses: []store.Status{store.StatusActive,
		store.StatusWaitingInput, store.StatusPausedLimit}})
	if err != nil {
		e.log.WarnContext(ctx, "record the tmux server's recovery on the runs", "err", err)
		return
	}
	for _, r := range runs {
		if (r.Runner == store.RunnerTmux || r.Runner == store.RunnerLive) && r.Session != "" {
			e.event(ctx, r, EventTmux, rec.String())
		}
	}
}
