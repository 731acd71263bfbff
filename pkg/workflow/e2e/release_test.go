package e2e_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/fakegithub"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// TestFollowedPullRequestsHoldNoSlot: with poll.max_concurrent = 1, a run whose pull request is followed holds
// its slot while its agent lives; pr.release_after later its agent is stopped and the next issue starts. A CI
// failure on the first pull request then waits for the slot the second run holds, and once that one is
// released too, restarts the first agent in its working copy with the round. Never two agents at once.
func TestFollowedPullRequestsHoldNoSlot(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	w := newWorld(t, followScript(out), func(c *config.Config) {
		c.PR.Follow = true
		c.PR.ReleaseAfter = config.Duration{Duration: 3 * time.Second}
		c.Poll.MaxConcurrent = 1
	})
	w.gh.SetGitDir(testRepo, w.remote)
	ctx := context.Background()
	var most atomic.Int32
	stop := make(chan struct{})
	defer close(stop)
	go func() { // the agents alive, sampled every 100 ms
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if s, err := w.svc.Tmux.Sessions(ctx, "ace-"); err == nil && int32(len(s)) > most.Load() {
				most.Store(int32(len(s)))
			}
		}
	}()

	first := w.run(workflow.UntilSettled)
	if first.Step != string(workflow.StepFollowPR) {
		t.Fatalf("run at %s (%s)", first.Step, first.Error)
	}
	second := w.gh.AddIssue(testRepo, fakegithub.IssueOptions{Title: "Second", Body: "Add GREETING.md too.", Author: "alice",
		Created: time.Now().Add(time.Minute)})
	w.gh.Label(testRepo, second, "ace", "alice")
	if rep := w.poll(); rep.Started != 0 {
		t.Fatalf("started %d while the followed run's agent lives, want 0 (max_concurrent 1)", rep.Started)
	}
	first = w.waitRun(first, "the first agent is released", func(r *store.Run) bool {
		return r.State.Follow != nil && r.State.Follow.Released
	})
	if w.sessionAlive() {
		t.Fatal("the released run's session is still alive")
	}
	w.pollUntil("the second issue starts in the freed slot", func() bool {
		_, err := w.svc.Store.LatestRun(ctx, testRepo, second)
		return err == nil
	})

	// A round on the released run waits for the slot, then restarts its agent in the same working copy.
	w.gh.AddCheckRun(testRepo, fakegithub.CheckRun{HeadSHA: w.gh.HeadSHA(testRepo, first.PRNumber), Name: "build",
		Conclusion: "failure", Title: "does not compile"})
	first = w.waitRun(first, "round 1 pushed", func(r *store.Run) bool { return roundDone(r, 1) })
	waited := false
	for _, ev := range w.progress() {
		if ev.Run != nil && ev.Run.ID == first.ID && ev.Kind == workflow.EventReleased {
			waited = true
		}
	}
	if !waited {
		t.Error("no released event on the first run")
	}
	var roundPrompt string
	for _, p := range w.prompts() {
		if strings.Contains(p, `check "build" failed`) {
			roundPrompt = p
		}
	}
	if !strings.HasPrefix(roundPrompt, "You were restarted") {
		t.Errorf("the round's prompt %q: want the restarted agent told what the round is about", roundPrompt)
	}
	if n := most.Load(); n > 1 {
		t.Fatalf("%d agents alive at once, want at most max_concurrent = 1", n)
	}
}
