package queue

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/aceworks/ace/internal/testkit"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
)

// TestFenceGoesUpWhileAHeartbeatHangs: cut off from the store, a host puts its fence up half of host.dead_after
// after its last heartbeat, even while the heartbeat after it has not failed yet. On a loaded machine a failing
// heartbeat took seconds; a fence that waited for one to fail went up late (6 s after the last heartbeat of a
// 10 s dead_after), and the agents' stop had too little of the time before another host moved their runs.
func TestFenceGoesUpWhileAHeartbeatHangs(t *testing.T) {
	st := &hangingStore{release: make(chan struct{})}
	defer st.unblock()
	cfg := config.Default()
	cfg.Host.DeadAfter = config.D(2 * time.Second)
	q := &Queue{st: st, cfg: cfg, self: "alpha", now: time.Now, client: noJobs{},
		o: Options{Logger: slog.New(slog.DiscardHandler)}}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go q.heartbeats(ctx)

	testkit.WaitFor(t, "the fence up while the heartbeat after the last one hangs", 30*time.Second, q.fence.up.Load)
	if !st.hanging() {
		t.Fatal("the fence went up after the heartbeat returned: the test shows nothing")
	}
}

// hangingStore answers the first heartbeat; every store call after it hangs (whatever its context says) until
// unblock, then fails.
type hangingStore struct {
	Store
	mu      sync.Mutex
	beats   int
	waiting bool
	release chan struct{}
	once    sync.Once
}

func (s *hangingStore) ListRuns(ctx context.Context, f store.Filter) ([]*store.Run, error) {
	s.mu.Lock()
	first := s.beats == 0
	s.waiting = !first
	s.mu.Unlock()
	if first {
		return nil, nil
	}
	<-s.release
	return nil, errors.New("the store does not answer")
}

func (s *hangingStore) Heartbeat(ctx context.Context, h store.Host) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.beats++
	return nil
}

func (s *hangingStore) hanging() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiting
}

func (s *hangingStore) unblock() { s.once.Do(func() { close(s.release) }) }

// noJobs is a River client with no job to list (the heartbeat's rescue of dead processes' jobs finds none).
type noJobs struct{ jobClient }

func (noJobs) JobList(context.Context, *river.JobListParams) (*river.JobListResult, error) {
	return nil, errors.New("no jobs here")
}
