package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aceworks/ace/pkg/tracker"
	"github.com/aceworks/ace/pkg/tracker/local"
	"github.com/aceworks/ace/pkg/workflow"
)

// recorder timestamps what the engine does to each issue, as it happens: when a dispatch pass first lists it,
// when its run is created, when its agent's session starts, when its pull request opens.
type recorder struct {
	mu       sync.Mutex
	listed   map[int]time.Time
	created  map[int][]time.Time
	prepared map[int][]time.Time // the working copy is ready
	sessions map[int][]time.Time // "started <agent> in <session>": a new tmux session
	restarts int                 // agents restarted in place
	prs      map[int][]time.Time
	order    []int         // issues in the order their runs were created
	retries  []retry       // steps that failed and will be tried again
	changed  chan struct{} // closed at the next record
}

func newRecorder() *recorder {
	return &recorder{listed: map[int]time.Time{}, created: map[int][]time.Time{}, sessions: map[int][]time.Time{},
		prs: map[int][]time.Time{}, prepared: map[int][]time.Time{}, changed: make(chan struct{})}
}

// observe is the engine's Observer: it runs in the engine's goroutines, so it only takes the time.
func (r *recorder) observe(p workflow.Progress) {
	if p.Run == nil {
		return
	}
	now := time.Now()
	n := p.Run.Issue
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case p.Kind == "created":
		r.created[n] = append(r.created[n], now)
		r.order = append(r.order, n)
	case p.Kind == "workspace":
		r.prepared[n] = append(r.prepared[n], now)
	case p.Kind == "session" && strings.HasPrefix(p.Message, "started "):
		r.sessions[n] = append(r.sessions[n], now)
	case p.Kind == "session" && strings.HasPrefix(p.Message, "restarted "):
		r.restarts++
	case p.Kind == "pull-request":
		r.prs[n] = append(r.prs[n], now)
	case p.Kind == "retry":
		r.retries = append(r.retries, retry{at: now, issue: n, step: string(p.Step), msg: p.Message})
	default:
		return
	}
	r.signal()
}

func (r *recorder) sawListed(issues []tracker.Issue) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, is := range issues {
		if _, ok := r.listed[is.Number]; !ok {
			r.listed[is.Number] = now
		}
	}
}

// retry is a step that failed and waits its backoff before it is tried again.
type retry struct {
	at    time.Time
	issue int
	step  string
	msg   string
}

// retriesSince lists the retries from t on.
func (r *recorder) retriesSince(t time.Time) []retry {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []retry
	for _, rt := range r.retries {
		if !rt.at.Before(t) {
			out = append(out, rt)
		}
	}
	return out
}

// signal wakes waiters; r.mu is held.
func (r *recorder) signal() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// waitFor waits until cond (called with the recorder locked) holds.
func (r *recorder) waitFor(ctx context.Context, what string, cond func() bool) error {
	for {
		r.mu.Lock()
		ok, changed := cond(), r.changed
		r.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting until %s: %w", what, ctx.Err())
		case <-changed:
		}
	}
}

// prsOf says how many of issues have a pull request, and when the last of them opened.
func (r *recorder) prsOf(issues []int) (n int, last time.Time) {
	for _, i := range issues {
		if ts := r.prs[i]; len(ts) > 0 {
			n++
			if ts[0].After(last) {
				last = ts[0]
			}
		}
	}
	return n, last
}

// listTracker is the local tracker, with each issue's first listing by a dispatch pass timestamped.
type listTracker struct {
	*local.Tracker
	rec *recorder
}

func (t *listTracker) ListLabeled(ctx context.Context, repo, label string) ([]tracker.Issue, error) {
	issues, err := t.Tracker.ListLabeled(ctx, repo, label)
	t.rec.sawListed(issues)
	return issues, err
}
