package workflow

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/procs"
	"github.com/aceworks/ace/pkg/runbox"
	"github.com/aceworks/ace/pkg/store"
)

// Liveness: a run is not left in silence because its agent's screen says it works, or says nothing ace knows.
// What the agent does shows elsewhere — its traffic through the run's proxy, its process tree's CPU, its session
// files and transcripts, its working copy, its screen beyond clocks and spinners (liveness_signals.go) — and no
// release of a CLI can fake those flat while it works. When every one of them has been flat for
// monitor.stuck_after, the runner looks once more: what ace knows on the screen is answered as usual, anything
// else (a dialog never seen, a screen that says working for ever) goes to a human on the issue with the screen,
// and a `stuck` event records the flat signals. The record per run is a cache in the process (a restart only
// starts the wait again), like the tmux runner's screen cache.

// liveness is the part of the engine that watches runs for signs of work.
type liveness struct {
	core stuckEvents
	cfg  *config.Config // monitor.stuck_after, monitor.interval
	now  clock
	box  *runbox.Boxes // the run's proxy: the agent's traffic

	mu   sync.Mutex
	runs map[int64]*pulse
}

// stuckEvents is what liveness needs of the engine's core: the stuck event, recorded as a step records it.
type stuckEvents interface {
	eventData(ctx context.Context, r *store.Run, kind EventKind, msg, data string)
}

// pulse is what liveness knows of one run: the look at which its signals last moved, and the last look; moved
// names what moved at the last look, when look took it (nil when it answered from its record).
type pulse struct {
	first, last signals
	moved       []string
}

// vitals is where a runner's agent shows its life.
type vitals struct {
	// root is the process whose tree is the agent (0: none known); withRoot counts root's own CPU, false where
	// root is ace's (the headless supervisor, the live host), which works for ace as much as for the agent.
	root     int
	withRoot bool
	// files and dirs hold the agent's session files and transcripts (every file below each dir).
	files, dirs []string
	// screen is what the agent shows now ("" for a headless agent: its transcript says it).
	screen string
}

// lookEvery is how often a run's signals are read at most: a headless or live run is visited every
// monitor.interval, and reading a working copy every second would cost more than it tells.
func (lv *liveness) lookEvery() time.Duration {
	m := lv.cfg.Monitor
	return max(m.Interval.Duration, min(m.StuckAfter.Duration/8, 10*time.Second))
}

// look reads run r's signals, unless it did so less than lookEvery ago, and reports whether every one has been
// flat for monitor.stuck_after (due), with the run's record. The wait starts again when the monitor last took the
// run (delivered, answered) after the signals last moved.
func (lv *liveness) look(r *store.Run, v func() vitals) (p pulse, due bool) {
	now := lv.now()
	lv.mu.Lock()
	old := lv.runs[r.ID]
	lv.mu.Unlock()
	if old != nil && now.Sub(old.last.At) < lv.lookEvery() && !old.first.At.Before(r.State.MonitorSince) {
		p := *old
		p.moved = nil
		return p, now.Sub(old.first.At) >= lv.cfg.Monitor.StuckAfter.Duration
	}
	s := lv.sample(r, v())
	lv.mu.Lock()
	defer lv.mu.Unlock()
	if lv.runs == nil {
		lv.runs = map[int64]*pulse{}
	}
	q := lv.runs[r.ID]
	var m []string
	if q != nil {
		m = moved(q.last, s)
	}
	switch {
	case q == nil, q.first.At.Before(r.State.MonitorSince), len(m) > 0:
		q = &pulse{first: s, last: s, moved: m}
		lv.runs[r.ID] = q
	default:
		q.last, q.moved = s, nil
	}
	return *q, s.At.Sub(q.first.At) >= lv.cfg.Monitor.StuckAfter.Duration
}

// deadline is when run r's signals, flat since p, would have been flat for stuck_after.
func (lv *liveness) deadline(p pulse) time.Time {
	return p.first.At.Add(lv.cfg.Monitor.StuckAfter.Duration)
}

// record is run id's record as its last look left it; ok is false when there is none (ace restarted since, or
// the run was forgotten).
func (lv *liveness) record(id int64) (p pulse, ok bool) {
	lv.mu.Lock()
	defer lv.mu.Unlock()
	q := lv.runs[id]
	if q == nil {
		return pulse{}, false
	}
	p = *q
	p.moved = nil
	return p, true
}

// forget drops run r's record: its agent shows something else than work (ready, a dialog ace answers, a
// question), or went to a human.
func (lv *liveness) forget(id int64) {
	lv.mu.Lock()
	delete(lv.runs, id)
	lv.mu.Unlock()
}

// sample reads every signal of run r now.
func (lv *liveness) sample(r *store.Run, v vitals) signals {
	s := signals{At: lv.now(), Files: sumFiles(v.files, v.dirs), Work: workPrint(r.Workdir), Screen: screenPrint(v.screen),
		Drawn: v.withRoot && v.screen != ""}
	s.Up, s.Down, s.Proxied = lv.box.Traffic(r.ID)
	if v.root > 0 {
		s.CPU = procs.TreeCPU(v.root, v.withRoot)
	}
	return s
}

// stuckData is a stuck event's Data: the signals when they last moved and now.
type stuckData struct {
	Flat   string  `json:"flat"`
	Since  signals `json:"since"`
	Now    signals `json:"now"`
	Screen string  `json:"screen_state"`
}

// toHuman reports that a human on the issue is to be asked about run r, whose signals have been flat since
// p.first while its agent's screen said state ("busy", or "unknown": nothing ace knows), with what the agent
// shows; once asked (Engine.reported), the stuck event is recorded.
func (lv *liveness) toHuman(ctx context.Context, r *store.Run, p pulse, state, screen string) (Result, error) {
	flat := lv.now().Sub(p.first.At).Round(time.Second)
	why := flatLine(p.first, p.last)
	var q string
	switch state {
	case string(agents.StateBusy):
		q = fmt.Sprintf("The agent says it is working, but nothing has moved for %s: %s. It may wait on something "+
			"that never comes. Answer to have ace type your answer into it, or look with `ace attach %d`.", flat, why, r.Issue)
	case "headless":
		q = fmt.Sprintf("The agent's turn has shown no sign of work for %s: %s. Its last output is below; your "+
			"answer goes to it as the next turn.", flat, why)
	default:
		q = fmt.Sprintf("The agent shows a screen ace does not know, and nothing has moved for %s: %s. Answer with "+
			"the keys or text that pass it.", flat, why)
	}
	return askFor(q, screen).then(func() { // the node asks (Engine.reported)
		data, _ := json.Marshal(stuckData{Flat: why, Since: p.first, Now: p.last, Screen: state})
		lv.core.eventData(ctx, r, EventStuck, fmt.Sprintf("stuck: no sign of work for %s (%s); asked a human", flat, why), string(data))
		lv.forget(r.ID)
	}), nil
}
