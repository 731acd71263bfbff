package workflow

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tracker"
)

// postsTracker keeps the comments posted on the issue; it is asked nothing else here.
type postsTracker struct {
	Tracker
	bodies []string
}

func (*postsTracker) FindComment(context.Context, string, int, string) (*tracker.Comment, error) {
	return nil, nil
}

func (p *postsTracker) CreateComment(_ context.Context, _ string, _ int, body string) (*tracker.Comment, error) {
	p.bodies = append(p.bodies, body)
	return &tracker.Comment{ID: int64(len(p.bodies))}, nil
}

// TestReachShownOnceItStarts: a reach state the visit started is completed after the visit (the runner's look only
// records the sign) — its hint, its event, the status comment saying so; one that was there before the visit is
// not posted again.
func TestReachShownOnceItStarts(t *testing.T) {
	t.Parallel()
	pt := &postsTracker{}
	cfg := &config.Config{}
	e := withParts(&Engine{cfg: cfg, o: Options{Config: cfg, Tracker: pt, Store: &eventsOnly{}, Now: time.Now}})
	r := &store.Run{ID: 1, Issue: 7, Agent: "claude", Runner: store.RunnerExec, Status: store.StatusActive, Step: string(StepMonitor)}
	r.State.Reach = &store.ReachState{Since: time.Now(), At: time.Now(), Dest: "api.example:443"}
	e.reach.settle(context.Background(), r, nil)
	if len(pt.bodies) != 1 || !strings.Contains(pt.bodies[0], "working, but") || r.State.Reach.Hint == "" {
		t.Fatalf("a reach state the visit started: comments %q, hint %q; want one status comment saying why, and a hint",
			pt.bodies, r.State.Reach.Hint)
	}
	e.reach.settle(context.Background(), r, r.State.Reach)
	if len(pt.bodies) != 1 {
		t.Errorf("a reach state that was there before the visit: %d comments, want it not posted again", len(pt.bodies))
	}
}
