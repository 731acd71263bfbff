package workflow

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
)

// TestAskStuckActsOnlyOnWhatStillHolds: tell_agent asks a human about an agent the look found stuck only while
// this process holds the liveness record the look judged and the screen read then is still busy or unknown; a
// screen ace knows by now goes back to the look, and the record with it.
func TestAskStuckActsOnlyOnWhatStillHolds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := config.Default()
	e := withParts(&Engine{cfg: cfg, o: Options{Config: cfg, Now: time.Now}})
	prof := agents.Profile{Name: "x", Markers: agents.Markers{
		Ready: regexp.MustCompile(`READY`), Busy: regexp.MustCompile(`WORKING`)}}
	r := &store.Run{ID: 1, Issue: 7}

	res, err := e.tmux.askStuck(ctx, r, prof, "WORKING")
	if err != nil || res.Next != StepMonitor || res.ask != nil {
		t.Fatalf("no record (ace restarted since the look): %+v %v, want back to the look", res, err)
	}

	e.alive.runs = map[int64]*pulse{1: {}}
	res, err = e.tmux.askStuck(ctx, r, prof, "READY")
	if err != nil || res.Next != StepMonitor || res.ask != nil {
		t.Fatalf("a ready composer: %+v %v, want back to the look", res, err)
	}
	if _, ok := e.alive.record(1); ok {
		t.Error("the record stayed after the agent showed a screen ace knows")
	}

	e.alive.runs = map[int64]*pulse{1: {}}
	res, err = e.tmux.askStuck(ctx, r, prof, "WORKING")
	if err != nil || res.ask == nil || res.ask.screen != "WORKING" {
		t.Fatalf("still busy: %+v %v, want a human asked with the screen", res, err)
	}
}
