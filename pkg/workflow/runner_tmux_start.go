package workflow

import (
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/procs"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tmuxops"
)

// An agent that has not shown its prompt yet is starting for as long as it shows signs of starting: its process
// tree's CPU, its screen (clocks and spinners left out), its traffic through the run's proxy. tmux.startup_timeout
// bounds the time without any of them, not the time since the start: gemini 0.61 draws nothing until it is ready,
// and its start — about 3 s of CPU, its 16 MB bundle parsed by two node processes — took over a minute of wall
// time on 2 cores shared with the test suite, an empty screen all along, which went to a human as a screen ace
// does not know (TestRealCLIs/gemini/tmux/approval on CI). An agent that starts no further — waiting on
// something, or showing a screen ace does not know — still goes to a human after startup_timeout.

// startFlat is how long run r's agent, not ready yet, has shown no sign of starting. Each look is compared with
// the one at which the signs last moved, so that a start slowed to a twentieth of a core still shows: its CPU over
// the whole wait, not between two looks a moment apart. While its screen is blank any CPU at all is a sign: nothing
// on it draws a spinner, the work is the start itself (liveness's threshold, made for a CLI redrawing its spinner,
// would take gemini starting at 3 % of a core for flat). The record is this process's (a restarted ace starts the
// wait afresh), and starts again when the run's wait does (DeliverSince: a human answered).
func (t *tmuxRunner) startFlat(r *store.Run, pane tmuxops.Pane, screen string) time.Duration {
	now := signals{At: t.now(), Screen: screenPrint(screen), CPU: procs.TreeCPU(pane.PID, true), Drawn: true}
	now.Up, now.Down, now.Proxied = t.box.Traffic(r.ID)
	t.mu.Lock()
	defer t.mu.Unlock()
	o := t.seen[r.ID]
	if o == nil {
		o = &observed{}
		t.seen[r.ID] = o
	}
	blank := strings.TrimSpace(screen) == ""
	if o.started.At.IsZero() || o.started.At.Before(r.State.DeliverSince) || len(moved(o.started, now)) > 0 ||
		blank && now.CPU-o.started.CPU >= cpuTicks {
		o.started = now
	}
	return now.At.Sub(o.started.At)
}

// cpuTicks is the least CPU time that shows in /proc (its clock ticks are 10 ms): work at all.
const cpuTicks = 20 * time.Millisecond
