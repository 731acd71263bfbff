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

// TestAskNotAskedChangesNothing: a runner's report that a human is to be asked changes the run only once the
// question is posted. Asking failed (the tracker down), the step is retried, and its next visit must find the run
// as this one did: a live conversation's question marked asked would never be asked again.
func TestAskNotAskedChangesNothing(t *testing.T) {
	t.Parallel()
	e := withParts(&Engine{o: Options{Tracker: downTracker{}}})
	r := &store.Run{ID: 1, Issue: 7, Runner: store.RunnerLive, Status: store.StatusActive, Step: string(StepMonitor)}
	res, err := e.reported(context.Background(), r, askFor("May it run the tests?", "").then(func() { r.State.LiveAsked = "p1" }), nil)
	if err == nil || res.Next != "" || r.State.LiveAsked != "" || r.State.Questions != 0 {
		t.Errorf("asking failed: err %v, next %q, marked asked %q, questions %d; want the error and the run as it was",
			err, res.Next, r.State.LiveAsked, r.State.Questions)
	}
	plain := Stay(0)
	if res, err := e.reported(context.Background(), r, plain, nil); err != nil || res != plain {
		t.Errorf("a result without a report: %+v, %v; want it passed through", res, err)
	}
}
