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
// a Watcher keeps the claims of the runs it drives from pass to pass — renewed all at once, with one statement,
// by a goroutine of its own, so that a long pass (a push, a dispatch starting agents) cannot let them expire —
// so a pass over N quiet agents costs two store reads, one tmux pane listing and only the screen captures that
// matter: no store writes per run while nothing changes.
type Watcher struct {
	e         *Engine
	held      map[store.ClaimKey]bool
	stopRenew context.CancelFunc
	renewDone chan struct{}
	// due is when each run asked to be looked at again (a run waiting for a human asks for poll.interval, so
	// the issue's comments are not fetched every second), with the run's version then: a run changed meanwhile
	// (ace send, ace stop) is looked at at once.
	due map[int64]visit
}

type visit struct {
	at      time.Time
	version int64
}

// NewWatcher returns a Watcher that holds no claim yet. Close it to stop its renewals and drop its claims.
func (e *Engine) NewWatcher() *Watcher {
	ctx, cancel := context.WithCancel(context.Background())
	w := &Watcher{e: e, held: map[store.ClaimKey]bool{}, due: map[int64]visit{}, stopRenew: cancel, renewDone: make(chan struct{})}
	go w.renew(ctx)
	return w
}

// renew extends this process's claims every quarter of their lifetime until ctx ends.
func (w *Watcher) renew(ctx context.Context) {
	defer close(w.renewDone)
	t := time.NewTicker(claimTTL / 4)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := w.e.o.Store.RenewClaims(ctx, w.e.o.Owner, claimTTL); err != nil && ctx.Err() == nil {
				w.e.log.Warn("renew claims", "owner", w.e.o.Owner, "err", err)
			}
		}
	}
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
	if len(w.held) > 0 {
		// A claim that lapsed anyway (the store out of reach for a while) may have been taken by another
		// process: only runs whose claims are still this process's are driven without claiming them again.
		mine, err := e.o.Store.ClaimsOf(ctx, e.o.Owner)
		if err != nil {
			return rep, err
		}
		for k := range w.held {
			if !mine[k] {
				delete(w.held, k)
			}
		}
	}
	listed := map[store.ClaimKey]bool{}
	for _, r := range runs {
		if ctx.Err() != nil {
			return rep, ctx.Err()
		}
		k := store.ClaimKey{Repo: r.Repo, Issue: r.Issue}
		listed[k] = true
		if v, ok := w.due[r.ID]; ok && v.version == r.Version && time.Now().Before(v.at) {
			continue
		}
		if !w.held[k] {
			if err := e.claimIssue(ctx, r.Repo, r.Issue); err != nil {
				if errors.Is(err, ErrBusy) {
					rep.Busy++
				} else {
					rep.Errors = append(rep.Errors, err)
				}
				continue
			}
			w.held[k] = true
		}
		resumeWaiting(r)
		wait, err := w.tick(ctx, r)
		if err != nil {
			if ctx.Err() != nil {
				return rep, ctx.Err()
			}
			rep.Errors = append(rep.Errors, fmt.Errorf("%s#%d: %w", r.Repo, r.Issue, err))
		}
		rep.Ticked++
		delete(w.due, r.ID)
		if r.Status.Terminal() {
			w.release(ctx, k)
		} else if wait > e.cfg.Monitor.Interval.Duration {
			// Waits up to a pass apart are what the pass cadence gives anyway; only longer ones are kept.
			w.due[r.ID] = visit{at: time.Now().Add(wait), version: r.Version}
		}
	}
	for k := range w.held {
		if !listed[k] {
			w.release(ctx, k) // finished by someone else (ace stop), or deleted
		}
	}
	return rep, nil
}

// tick steps the run until a node asks to wait (returned) or the run settles.
func (w *Watcher) tick(ctx context.Context, r *store.Run) (time.Duration, error) {
	for !r.Status.Terminal() {
		res, err := w.e.Step(ctx, r)
		if err != nil {
			return 0, err
		}
		if UntilSettled(r, res) || res.Wait > 0 {
			return res.Wait, nil
		}
	}
	return 0, nil
}

// Close stops the renewals and drops every claim the Watcher holds; the agents keep running and the next ace
// picks them up at once.
func (w *Watcher) Close(ctx context.Context) {
	w.stopRenew()
	<-w.renewDone
	for k := range w.held {
		w.release(context.WithoutCancel(ctx), k)
	}
}

func (w *Watcher) release(ctx context.Context, k store.ClaimKey) {
	delete(w.held, k)
	if err := w.e.o.Store.ReleaseClaim(ctx, k.Repo, k.Issue, w.e.o.Owner); err != nil {
		w.e.log.WarnContext(ctx, "release claim", "repo", k.Repo, "issue", k.Issue, "err", err)
	}
}
