package workflow

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aceworks/ace/pkg/store"
)

// Watcher is the monitor loop of a long-running ace (`ace poll` without --once): each Pass gives every
// unfinished run one monitor tick. Unlike PollOnce, which takes and drops each run's claim around its tick,
// a Watcher keeps the claims of the runs it drives from pass to pass and renews them all with one statement, so
// a pass over N quiet agents costs one run listing, one tmux pane listing and only the screen captures that
// matter — no store writes per run while nothing changes.
type Watcher struct {
	e         *Engine
	held      map[claimKey]bool
	renewedAt time.Time
}

type claimKey struct {
	repo  string
	issue int
}

// NewWatcher returns a Watcher that holds no claim yet.
func (e *Engine) NewWatcher() *Watcher {
	return &Watcher{e: e, held: map[claimKey]bool{}}
}

// WatchReport says what one Pass did.
type WatchReport struct {
	Ticked int // runs given a tick
	Busy   int // runs driven by another ace process, left alone
	Errors []error
}

// Pass ticks every active or waiting run once. Errors of one run never stop the pass.
func (w *Watcher) Pass(ctx context.Context) (WatchReport, error) {
	var rep WatchReport
	e := w.e
	runs, err := e.o.Store.ListRuns(ctx, store.Filter{Statuses: []store.Status{store.StatusActive, store.StatusWaitingInput}})
	if err != nil {
		return rep, fmt.Errorf("list active runs: %w", err)
	}
	if len(w.held) > 0 && time.Since(w.renewedAt) >= claimTTL/4 {
		if _, err := e.o.Store.RenewClaims(ctx, e.o.Owner, claimTTL); err != nil {
			return rep, err
		}
		w.renewedAt = time.Now()
	}
	listed := map[claimKey]bool{}
	for _, r := range runs {
		if ctx.Err() != nil {
			return rep, ctx.Err()
		}
		k := claimKey{r.Repo, r.Issue}
		listed[k] = true
		if !w.held[k] {
			if err := e.claimIssue(ctx, r.Repo, r.Issue); err != nil {
				if errors.Is(err, ErrBusy) {
					rep.Busy++
				} else {
					rep.Errors = append(rep.Errors, err)
				}
				continue
			}
			if len(w.held) == 0 {
				w.renewedAt = time.Now()
			}
			w.held[k] = true
		}
		if r.Status == store.StatusWaitingInput && Step(r.Step) != StepWaitingInput {
			r.Step = string(StepWaitingInput)
		}
		if err := e.Drive(ctx, r, OneTick); err != nil {
			if ctx.Err() != nil {
				return rep, ctx.Err()
			}
			rep.Errors = append(rep.Errors, fmt.Errorf("%s#%d: %w", r.Repo, r.Issue, err))
		}
		rep.Ticked++
		if r.Status.Terminal() {
			w.release(ctx, k)
		}
	}
	for k := range w.held {
		if !listed[k] {
			w.release(ctx, k) // finished by someone else (ace stop), or deleted
		}
	}
	return rep, nil
}

// Close drops every claim the Watcher holds; the agents keep running and the next ace picks them up at once.
func (w *Watcher) Close(ctx context.Context) {
	for k := range w.held {
		w.release(context.WithoutCancel(ctx), k)
	}
}

func (w *Watcher) release(ctx context.Context, k claimKey) {
	delete(w.held, k)
	if err := w.e.o.Store.ReleaseClaim(ctx, k.repo, k.issue, w.e.o.Owner); err != nil {
		w.e.log.WarnContext(ctx, "release claim", "repo", k.repo, "issue", k.issue, "err", err)
	}
}
