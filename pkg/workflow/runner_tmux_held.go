package workflow

import (
	"context"
	"time"

	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tmuxops"
	"github.com/aceworks/ace/pkg/untrusted"
)

// Held runs: a monitored tmux run's job may sleep while the pane watch (pkg/queue) looks at its agent for it,
// waking it only when the agent's screen changes in a way the monitor acts on. The engine offers this to the
// queue (Holdable, Changed); the tmux runner knows how long to sleep and what would wake it.

// quietWait is how long the job of a monitored tmux run sleeps when nothing calls for it sooner: the pane watch
// wakes it at once when its agent changes. Bounded by what the monitor does on a timer: the idle nudge (within
// a quarter of idle_after), the issue check, the periodic recapture.
func (t *tmuxRunner) quietWait() time.Duration {
	w := min(t.cfg.Monitor.IdleAfter.Duration/4, t.issueCheckEvery, recaptureEvery)
	return max(w, t.cfg.Monitor.Interval.Duration)
}

// changed returns the held runs whose agents changed in a way the monitor acts on (their snooze not yet over),
// from one listing of every pane.
func (t *tmuxRunner) changed(ctx context.Context, held map[int64]Held, now time.Time) (map[int64]Held, error) {
	panes, err := t.tmux.Panes(ctx)
	if err != nil {
		return nil, err
	}
	byName := make(map[string]tmuxops.Pane, len(panes))
	for _, p := range panes {
		byName[p.Session] = p
	}
	wake := map[int64]Held{}
	for id, h := range held {
		if !now.After(h.Until) && t.needsVisit(h, byName, now) {
			wake[id] = h
		}
	}
	return wake, nil
}

// needsVisit says whether the monitor would act on what the held agent shows now.
func (t *tmuxRunner) needsVisit(h Held, panes map[string]tmuxops.Pane, now time.Time) bool {
	pane, ok := panes[h.Session]
	if !ok || pane.Dead {
		return true
	}
	for _, f := range []string{doneFile, questionFile} {
		if untrusted.New(h.Workdir).Exists(f) {
			return true
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	o := t.seen[h.RunID]
	return o == nil || !o.revisit.IsZero() && !now.Before(o.revisit) || needCapture(o, pane, now, t.cfg.Monitor.Settle.Duration)
}

// Held is a monitored tmux run whose job sleeps while the pane watch (pkg/queue) looks at its agent for it.
type Held struct {
	RunID   int64
	Session string
	Workdir string
	Until   time.Time // the job's own snooze ends then: no need to wake it after
}

// Holdable says whether the job of r, which asked to be visited again after wait, may sleep a quiet interval
// instead while the pane watch looks at its agent (a monitored tmux run that waits the usual monitor.interval),
// and what it holds.
func (e *Engine) Holdable(r *store.Run, wait time.Duration) (quiet time.Duration, h Held, ok bool) {
	if Step(r.Step) != StepMonitor || Describe(r).Name() != store.RunnerTmux || r.Session == "" ||
		wait != e.cfg.Monitor.Interval.Duration {
		return wait, Held{}, false
	}
	quiet = e.tmux.quietWait()
	return quiet, Held{RunID: r.ID, Session: r.Session, Workdir: r.Workdir, Until: time.Now().Add(quiet)}, true
}

// Changed returns the held runs whose agents changed in a way the monitor acts on, from one look at every pane.
func (e *Engine) Changed(ctx context.Context, held map[int64]Held, now time.Time) (map[int64]Held, error) {
	return e.tmux.changed(ctx, held, now)
}
