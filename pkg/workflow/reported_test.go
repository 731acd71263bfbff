package workflow

import (
	"context"
	"errors"
	"testing"

	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tracker"
)

// downTracker fails as a tracker that cannot be reached does; it is asked nothing else here.
type downTracker struct{ Tracker }

func (downTracker) FindComment(context.Context, string, int, string) (*tracker.Comment, error) {
	return nil, errors.New("tracker down")
}

// TestAskIsKeptUntilPosted: a runner's report that a human is to be asked is decided by the node and kept in the
// run for the ask_human step, together with what the runner changes once it asked — a live conversation's question
// marked asked is not looked for again, so it must not be lost. Posting it failed (the tracker down), the run stays
// at ask_human with the question, and the step's next visit posts it.
func TestAskIsKeptUntilPosted(t *testing.T) {
	t.Parallel()
	e := withParts(&Engine{o: Options{Tracker: downTracker{}}})
	r := &store.Run{ID: 1, Issue: 7, Runner: store.RunnerLive, Status: store.StatusActive, Step: string(StepMonitor)}
	res, err := e.reported(context.Background(), r, askFor("May it run the tests?", "").then(func() { r.State.LiveAsked = "p1" }), nil)
	if err != nil || res.Next != StepAsk || r.State.LiveAsked != "p1" || r.State.Ask == nil || r.State.Ask.Message != "May it run the tests?" {
		t.Fatalf("the node's decision: err %v, next %q, marked asked %q, kept %+v; want ask_human with the question kept",
			err, res.Next, r.State.LiveAsked, r.State.Ask)
	}
	r.Step = string(StepAsk)
	if res, err := e.ask(context.Background(), r); err == nil || res.Next != "" || r.State.Ask == nil || r.State.Questions != 0 {
		t.Errorf("posting failed: err %v, next %q, kept %+v, questions %d; want the error and the question kept",
			err, res.Next, r.State.Ask, r.State.Questions)
	}
	plain := Stay(0)
	if res, err := e.reported(context.Background(), r, plain, nil); err != nil || res != plain {
		t.Errorf("a result without a report: %+v, %v; want it passed through", res, err)
	}
}
