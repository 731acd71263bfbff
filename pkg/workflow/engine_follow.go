package workflow

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aceworks/ace/pkg/store"
)

// What a caller of the engine follows of its runs: one run until it has gone far enough (Follow, Until...), or
// every event of every run as it is recorded (Subscribe).

// Until says when a caller following a run (Follow) has seen enough.
type Until func(r *store.Run) bool

// UntilSettled follows a run until it is finished or waits for a human (an answer, or its pull request's
// reviewers and CI while it follows it).
func UntilSettled(r *store.Run) bool {
	return r.Status.Terminal() || r.Status == store.StatusWaitingInput || Step(r.Step) == StepFollowPR
}

// UntilMonitoring follows a run until its prompt is delivered (it is being monitored) or it settles.
func UntilMonitoring(r *store.Run) bool {
	return UntilSettled(r) || Step(r.Step) == StepMonitor
}

// Follow enqueues the run's job (or wakes it) and waits until until says so, the run finishes, or ctx ends. The
// run is worked by whichever ace process works this host's queue — this one when its Queue is started — and r is
// kept up to date from the store.
func (e *Engine) Follow(ctx context.Context, r *store.Run, until Until) error {
	if err := e.enqueue(ctx, r); err != nil {
		return err
	}
	for {
		changed := e.changes()
		fresh, err := e.o.Store.GetRun(ctx, r.ID)
		if err != nil {
			return fmt.Errorf("read run %d: %w", r.ID, err)
		}
		*r = *fresh
		if r.Status.Terminal() || until(r) {
			return nil
		}
		// Changes made in this process arrive at once; those of another process at the next look.
		t := time.NewTimer(max(e.cfg.Monitor.Interval.Duration, 50*time.Millisecond))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-changed:
		case <-t.C:
		}
		t.Stop()
	}
}

// Subscribe returns a channel of every run event published from now on, with room for buffer events, and a
// function that ends the subscription (and closes the channel).
func (e *Engine) Subscribe(buffer int) (<-chan Progress, func()) {
	b := &e.bus
	ch := make(chan Progress, max(buffer, 1))
	b.mu.Lock()
	if b.subs == nil {
		b.subs = map[int]chan Progress{}
	}
	id := b.next
	b.next++
	b.subs[id] = ch
	b.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			b.mu.Lock()
			delete(b.subs, id)
			b.mu.Unlock()
			close(ch)
		})
	}
}

// Dropped counts the events subscribers were too slow to take.
func (e *Engine) Dropped() int64 { return e.bus.dropped.Load() }
