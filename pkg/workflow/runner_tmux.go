package workflow

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/runbox"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tmuxops"
)

// tmuxRunner runs the agent's own terminal UI in a tmux session (`ace attach` shows it): the prompt is pasted
// and verified on its screen (runner_tmux_deliver.go), the monitor reads its screen (node_monitor.go), and text goes in
// as a paste or, at a menu, as keys (node_input.go).
type tmuxRunner struct {
	// Busy: a tmux agent's screen tells busy from idle, and Observe reads it; Queue: text typed into a live
	// session needs no keeping; Abandon: a tmux session started by a lost visit is found again by its name
	// (Start re-attaches to it).
	tmuxKind // its name, and how a run of it is described (runner_kinds.go)
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
	seen map[int64]*observed // per-run screen cache: what the monitor saw last (below)
}

// What the tmux runner saw of each run's screen (seen), kept between the monitor's visits: an optimisation, never the
// truth (a restarted ace starts without it and looks again), and its look at a pane through it (look, capture).
// The files that observe, type, deliver and judge liveness share it.

// observed is what the monitor saw of a session last time: with it, a tick whose pane shows no new activity
// needs no screen capture. It is a cache; losing it (a restart) only costs one capture.
type observed struct {
	activity   time.Time
	screen     string
	state      agents.State
	changedAt  time.Time // when the screen last differed from the one before
	capturedAt time.Time
	readyAt    time.Time // deliver_prompt: since when the composer has been ready without a break
	// pasteIntent: this process saved the intent to paste the prompt and has not pasted yet (deliver_prompt).
	pasteIntent bool
	// revisit is when the monitor means to act on a screen it saw and left for now (revisitAt).
	revisit time.Time
	// started is deliver_prompt's look at a starting agent at which its signs of starting last moved (startFlat).
	started signals
}

// recaptureEvery bounds how stale a cached screen may get even when tmux reports no activity.
const recaptureEvery = 30 * time.Second

// revisitAt has the pane watch wake the run's job at at: the monitor saw a screen it will act on only then (a
// dialog settling before it is answered, a menu just answered), and a screen that stays as it is prints nothing
// that would wake the job earlier than its quiet snooze (claude 2.1.331's auto-mode notice, drawn just after an
// answer, waited 30 s for its answer).
func (t *tmuxRunner) revisitAt(runID int64, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if o := t.seen[runID]; o != nil {
		o.revisit = at
	}
}

// needCapture decides whether the cached screen o may be stale in a way that matters. Output that is still
// flowing means the agent is working: nothing on its screen waits for an answer, so it is read only once the
// output has stopped for settle (a dialog, a question, an idle composer are all still screens). The cached
// screen is also refreshed every recaptureEvery, and always read when tmux reports no activity time at all.
func needCapture(o *observed, pane tmuxops.Pane, now time.Time, settle time.Duration) bool {
	switch {
	case o.capturedAt.IsZero(), pane.Activity.IsZero(), now.Sub(o.capturedAt) >= recaptureEvery:
		return true
	case pane.Activity.Equal(o.activity) && o.capturedAt.Sub(pane.Activity) >= time.Second:
		return false // nothing printed since the last capture
	case pane.Activity.Equal(o.activity):
		// tmux reports activity in whole seconds: output later in the second of the last capture leaves the
		// activity time as it was (a permission dialog drawn just after a capture waited recaptureEvery, 30 s).
		return now.Sub(o.capturedAt) >= settle
	}
	// tmux reports activity in whole seconds, so the output may be up to a second younger than it says.
	return now.Sub(pane.Activity) >= settle+time.Second
}

// readyFor reports whether the run's agent has shown a ready composer, without a break, for readySettle; a look
// that is not ready starts the wait afresh. It is kept with the monitor's cache: losing it costs one wait.
func (t *tmuxRunner) readyFor(runID int64, ready bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	o := t.seen[runID]
	if o == nil {
		o = &observed{}
		t.seen[runID] = o
	}
	now := t.now()
	switch {
	case !ready:
		o.readyAt = time.Time{}
		return false
	case o.readyAt.IsZero():
		o.readyAt = now
	}
	return now.Sub(o.readyAt) >= readySettle
}

// readySettle is how long a starting agent's composer must stay ready before the prompt goes in: gemini 0.61
// draws its composer about 0.3 s before its trust dialog, which then took the pasted prompt's Enter as its
// answer and restarted, losing the prompt (seen end to end in realcli_e2e_test.go).
const readySettle = time.Second

func (t *tmuxRunner) forget(runID int64) {
	t.mu.Lock()
	delete(t.seen, runID)
	t.mu.Unlock()
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// setPasteIntent records whether this process saved the intent to paste run id's prompt and has not pasted
// yet, and returns what was recorded before.
func (t *tmuxRunner) setPasteIntent(id int64, intent bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	o := t.seen[id]
	if o == nil {
		o = &observed{}
		t.seen[id] = o
	}
	was := o.pasteIntent
	o.pasteIntent = intent
	return was
}

// look returns the session's screen and state, capturing only when needCapture says the screen may tell
// something new: with many sessions, capture-pane is the expensive call.
func (t *tmuxRunner) look(ctx context.Context, r *store.Run, prof agents.Profile, pane tmuxops.Pane) (*observed, error) {
	now := t.now()
	t.mu.Lock()
	o := t.seen[r.ID]
	if o == nil {
		o = &observed{}
		t.seen[r.ID] = o
	}
	need := needCapture(o, pane, now, t.cfg.Monitor.Settle.Duration)
	o.revisit = time.Time{} // this look acts on what it sees, or asks for a revisit anew
	t.mu.Unlock()
	if !need {
		return o, nil
	}
	return t.capture(ctx, r, prof, pane, o)
}

// capture reads the session's screen now into its cached record o.
func (t *tmuxRunner) capture(ctx context.Context, r *store.Run, prof agents.Profile, pane tmuxops.Pane, o *observed) (*observed, error) {
	now := t.now()
	screen, err := t.tmux.Capture(ctx, r.Session, 0)
	if err != nil {
		return nil, fmt.Errorf("capture screen: %w", err)
	}
	state := prof.Classify(screen, pane.Dead, pane.ExitStatus)
	// Under the lock: the pane watch (needsVisit) reads the same record from its own goroutine.
	t.mu.Lock()
	if screen != o.screen || o.capturedAt.IsZero() {
		o.changedAt = now
	}
	o.screen, o.activity, o.capturedAt, o.state = screen, pane.Activity, now, state
	t.mu.Unlock()
	return o, nil
}
