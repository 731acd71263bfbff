package e2e_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/fakegithub"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// TestIdleAgentsGiveWayToWork: with poll.max_concurrent = 1 and pr.release_after as it comes (10 minutes), a run
// whose pull request is followed keeps its agent alive but idle, and holds no slot for work: the next issue starts
// at the next dispatch pass, and the idle agent gives way to it (released). A CI failure on the first pull request
// then takes the slot back — the second run's agent, idle in turn, gives way — and the first agent starts again in
// its conversation (its continue_command): the scripted agent sees its earlier prompt and does the round's part of
// its script. Never two agents at once.
func TestIdleAgentsGiveWayToWork(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	sessions := filepath.Join(t.TempDir(), "sessions")
	w := newWorld(t, followScript(out), func(c *config.Config) {
		c.PR.Follow = true
		c.Poll.MaxConcurrent = 1
		fake := c.Agents["fake"]
		fake.Command += " --sessions " + sessions
		fake.ContinueCommand = fake.Command + " --continue"
		c.Agents["fake"] = fake
	})
	w.gh.SetGitDir(testRepo, w.remote)
	ctx := context.Background()
	most := w.sampleAgents()

	first := w.run(workflow.UntilSettled)
	if first.Step != string(workflow.StepFollowPR) {
		t.Fatalf("run at %s (%s)", first.Step, first.Error)
	}
	first = w.waitRun(first, "the first agent idles", func(r *store.Run) bool { return r.Slot == store.SlotIdle })
	if !w.sessionAlive() {
		t.Fatal("the idle agent's session is gone: nobody needed its slot")
	}
	second := w.gh.AddIssue(testRepo, fakegithub.IssueOptions{Title: "Second", Body: "Add GREETING.md too.", Author: "alice",
		Created: time.Now().Add(time.Minute)})
	w.gh.Label(testRepo, second, "ace", "alice")
	if rep := w.poll(); rep.Started != 1 {
		t.Fatalf("a pass started %d runs beside an idle agent, want 1 (max_concurrent 1): %+v", rep.Started, rep)
	}
	first = w.waitRun(first, "the first agent gives way", workflow.AgentReleased)
	if w.sessionAlive() {
		t.Fatal("the released run's session is still alive")
	}
	next, err := w.svc.Store.LatestRun(ctx, testRepo, second)
	if err != nil {
		t.Fatal(err)
	}
	next = w.waitRun(next, "the second run's pull request", func(r *store.Run) bool { return r.Slot == store.SlotIdle })

	// A round on the released run takes the slot back from the second run's idle agent, and resumes the first
	// agent's conversation in its working copy.
	w.gh.AddCheckRun(testRepo, fakegithub.CheckRun{HeadSHA: w.gh.HeadSHA(testRepo, first.PRNumber), Name: "build",
		Conclusion: "failure", Title: "does not compile"})
	first = w.waitRun(first, "round 1 pushed", func(r *store.Run) bool { return roundDone(r, 1) })
	if b, err := os.ReadFile(filepath.Join(out, "round1.md")); err != nil || !strings.Contains(string(b), "`build` failed") {
		t.Errorf("the resumed agent did not do the round's part of its script: %q, %v", b, err)
	}
	if h, ok := w.historyOf(`check "build" failed`); !ok || h < 1 {
		t.Errorf("the round's prompt reached the agent with %d earlier prompts in its conversation (found %v), want the task's before it", h, ok)
	}
	if next, err = w.svc.Store.GetRun(ctx, next.ID); err != nil || !workflow.AgentReleased(next) {
		t.Errorf("the second run's idle agent did not give way to the round: %+v, %v", next, err)
	}
	for _, r := range []*store.Run{first, next} {
		if !w.hasEvent(r, workflow.EventReleased, "gave way to") {
			t.Errorf("run %d has no event saying its idle agent gave way", r.ID)
		}
	}
	if n := most.Load(); n > 1 {
		t.Fatalf("%d agents alive at once, want at most max_concurrent = 1", n)
	}
}

// sampleAgents counts the agents alive (the tmux sessions of runs) every 100 ms until the test ends, and keeps
// the most seen at once.
func (w *world) sampleAgents() *atomic.Int32 {
	var most atomic.Int32
	ctx := w.t.Context()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			if s, err := w.svc.Tmux.Sessions(ctx, "ace-"); err == nil && int32(len(s)) > most.Load() {
				most.Store(int32(len(s)))
			}
		}
	}()
	return &most
}

// historyOf is how many earlier prompts the fake agent's conversation held when it received the last prompt
// containing text.
func (w *world) historyOf(text string) (int, bool) {
	w.t.Helper()
	b, err := os.ReadFile(w.recordPath())
	if err != nil {
		w.t.Fatal(err)
	}
	h, found := 0, false
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var rec struct {
			Prompt  string `json:"prompt"`
			History int    `json:"history"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && strings.Contains(rec.Prompt, text) {
			h, found = rec.History, true
		}
	}
	return h, found
}

// hasEvent reports whether the run's log has an event of kind whose message contains text.
func (w *world) hasEvent(r *store.Run, kind workflow.EventKind, text string) bool {
	w.t.Helper()
	evs, err := w.svc.Store.Events(context.Background(), r.ID)
	if err != nil {
		w.t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Kind == string(kind) && strings.Contains(ev.Message, text) {
			return true
		}
	}
	return false
}
