package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/testkit"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/procs"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// TestHandoverResumesAfterACrash: ace decided to hand a paused run to a fallback agent and ended before it made
// the handover (the run stored at the handover step, the handover pending). The next ace makes it: the first
// agent, still in its session, is read and stopped, and the second one takes the run over and finishes it.
func TestHandoverResumesAfterACrash(t *testing.T) {
	t.Parallel()
	reset := time.Now().Add(3 * time.Hour).Truncate(time.Second)
	dir := t.TempDir()
	w := newWorld(t, firstAgentScript(dir, reset), func(c *config.Config) {
		withAgents(t, dir, "tmux", "tmux")(c)
		c.Limits.Backoff = config.D(300 * time.Millisecond)
	})
	pausedOn(t, w, "fake2", reset.Add(time.Hour)) // no fallback agent free: the run pauses on fake
	r := w.run(func(r *store.Run) bool { return r.Agent != "fake" || untilPaused(r) })
	if r.Status != store.StatusPausedLimit || r.Agent != "fake" {
		t.Fatalf("run %s on %s (%s), want paused_limit on fake", r.Status, r.Agent, r.Error)
	}
	w.stopQueue()

	// What the ace that ended left: the move to the handover saved, nothing of the handover made.
	ctx := context.Background()
	r, err := w.svc.Store.LatestRun(ctx, testRepo, testIssue)
	if err != nil {
		t.Fatal(err)
	}
	r.Step, r.Status = string(workflow.StepHandover), store.StatusActive
	r.State.Fallback = &store.FallbackState{Pending: &store.Handover{From: "fake", To: "fake2", Until: reset.UTC(),
		Message: r.State.Limit.Message}}
	if err := w.svc.Store.UpdateRun(ctx, r, nil); err != nil {
		t.Fatal(err)
	}
	freeAgent(t, w, 194)
	if !w.sessionAlive() {
		t.Fatal("the first agent's session did not outlive its ace")
	}

	if err := w.svc.Close(); err != nil {
		t.Fatal(err)
	}
	w.open() // a new ace process
	r = w.run(workflow.UntilSettled)
	if r.Status != store.StatusDone || r.Agent != "fake2" || len(w.gh.PRs(testRepo)) != 1 {
		t.Fatalf("run %s on %s (%s), %d PRs; want done by fake2 with one", r.Status, r.Agent, r.Error, len(w.gh.PRs(testRepo)))
	}
	if f := r.State.Fallback; f.Pending != nil || len(f.Handovers) != 1 || f.Handovers[0].From != "fake" ||
		f.Handovers[0].To != "fake2" || !f.Handovers[0].Until.Equal(reset) {
		t.Errorf("fallback %+v, want the one handover made, from fake to fake2 until %v", f, reset)
	}
	pid := readPID(t, filepath.Join(dir, "agent1.pid"))
	testkit.WaitFor(t, fmt.Sprintf("the first agent (pid %d) to be gone", pid), 10*time.Second, func() bool { return !procs.Alive(pid) })
	seen, err := os.ReadFile(filepath.Join(dir, "handover-seen.md"))
	if err != nil {
		t.Fatalf("the second agent did not find the handover: %v", err)
	}
	for _, want := range []string{"Outline the greeting", "Usage limit reached"} {
		if !strings.Contains(string(seen), want) {
			t.Errorf("the handover lacks %q:\n%s", want, seen)
		}
	}
	handed := 0
	for _, ev := range w.progress() {
		if ev.Kind == workflow.EventFallback && strings.Contains(ev.Message, "handed the run to fake2") {
			handed++
		}
	}
	if handed != 1 {
		t.Errorf("%d events of the handover, want 1", handed)
	}
}
