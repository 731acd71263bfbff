package e2e_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/fakegithub"
	"github.com/aceworks/ace/internal/testkit"
	"github.com/aceworks/ace/pkg/config"
)

// TestDispatchDuringAPass: an issue labelled while a dispatch pass runs — after the pass listed the labelled
// issues, before River records it finished — starts at once, not at the next poll.interval. The label's webhook
// asks for a dispatch (Queue.Dispatch), which finds the pass running; it must run again right after.
func TestDispatchDuringAPass(t *testing.T) {
	t.Parallel()
	w := newPollingWorld(t, "hang\n", func(c *config.Config) {
		c.Poll.Interval = config.Duration{Duration: time.Hour} // only the start-up pass and the wakes dispatch
		c.Poll.MaxConcurrent = 4
	})
	ctx := context.Background()
	testkit.WaitFor(w.t, "the start-up pass starts the labelled issue", 30*time.Second, func() bool {
		_, err := w.svc.Store.LatestRun(ctx, testRepo, testIssue)
		return err == nil
	})

	// A second pass is caught after it listed the issues: at the question of who labelled the first new one.
	first := w.gh.AddIssue(testRepo, fakegithub.IssueOptions{Title: "first", Author: "alice"})
	w.gh.Label(testRepo, first, "ace", "alice")
	hold := make(chan struct{})
	events := fmt.Sprintf("/issues/%d/events", first)
	w.gh.Inject(fakegithub.Fault{Path: events, Hold: hold})
	if err := w.svc.Queue.Dispatch(ctx); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(w.t, "the pass asks who labelled the first issue", 30*time.Second, func() bool { return w.gh.PathCount(events) > 0 })

	second := w.gh.AddIssue(testRepo, fakegithub.IssueOptions{Title: "second", Author: "alice"})
	w.gh.Label(testRepo, second, "ace", "alice")
	if err := w.svc.Queue.Dispatch(ctx); err != nil { // what the label's webhook does
		t.Fatal(err)
	}
	close(hold)
	testkit.WaitFor(w.t, "the issue labelled during the pass starts", 15*time.Second, func() bool {
		_, err := w.svc.Store.LatestRun(ctx, testRepo, second)
		return err == nil
	})
	if _, err := w.svc.Store.LatestRun(ctx, testRepo, first); err != nil {
		t.Fatalf("the issue of the held pass: %v", err)
	}
}
