package workflow

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/runbox"
	"github.com/aceworks/ace/pkg/store"
)

// tmuxRunner runs the agent's own terminal UI in a tmux session (`ace attach` shows it): the prompt is pasted
// and verified on its screen (runner_tmux_deliver.go), the monitor reads its screen (node_monitor.go), and text goes in
// as a paste or, at a menu, as keys (node_input.go).
type tmuxRunner struct {
	// Busy: a tmux agent's screen tells busy from idle, and Observe reads it; Queue: text typed into a live
	// session needs no keeping; Abandon: a tmux session started by a lost visit is found again by its name
	// (Start re-attaches to it).
	runnerDefaults
	core runHost // the run's events and the engine's rulings (runner.go)
	cfg  *config.Config
	now  clock
	log  *slog.Logger
	root string // ace's root: the panes' transcripts are under it (compaction)
	// issueCheckEvery bounds the quiet wait of a held run (quietWait): the monitor checks the issue that often.
	issueCheckEvery time.Duration

	// The parts it calls: the run's agent (its profile, its variables), the prompts it types, the spending it
	// reads and stops on, the liveness and reach it tells what it sees, the box whose proxy counts the agent's
	// traffic (startFlat).
	agent   *runAgent
	prompts *prompts
	spend   *spending
	alive   *liveness
	reach   *reach
	box     *runbox.Boxes

	// panes are the agents' tmux sessions (runner_panes.go), shared with the live runner; tmux is their client,
	// through which this runner reads its agents' screens and types into them.
	panes *panes
	tmux  Sessions

	mu   sync.Mutex
	seen map[int64]*observed // per-run screen cache: what the monitor saw last (runner_tmux_seen.go)
}

func (*tmuxRunner) Name() string { return store.RunnerTmux }

func (*tmuxRunner) Where(r *store.Run) string {
	if r.Session == "" {
		return "no tmux session yet"
	}
	return "tmux session " + r.Session
}

func (*tmuxRunner) Session(r *store.Run) string {
	if r.Session == "" {
		return "-"
	}
	return r.Session
}

func (*tmuxRunner) Watch(r *store.Run) string { return fmt.Sprintf("ace attach %d", r.Issue) }

func (*tmuxRunner) HasScreen() bool { return true }

func (*tmuxRunner) Delivery() string { return "typed into the session" }

func (*tmuxRunner) IdleProcess() bool { return true }
