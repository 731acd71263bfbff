package e2e_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/fakegithub"
	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// withOther is a world's tune for the idle-agent cases of runs waiting on a human or a limit: one slot
// (max_concurrent = 1); the fake agent keeps its conversations (--sessions, continue_command); and a second agent,
// "other" (the fake agent playing workScript), which an issue labelled ace:agent:other gets — another account,
// not paused with the first.
func withOther(t *testing.T, tune func(*config.Config)) func(*config.Config) {
	sessions := filepath.Join(t.TempDir(), "sessions")
	other := filepath.Join(t.TempDir(), "other-script.txt")
	if err := os.WriteFile(other, []byte(workScript), 0o644); err != nil {
		t.Fatal(err)
	}
	return func(c *config.Config) {
		if tune != nil {
			tune(c)
		}
		c.Poll.MaxConcurrent = 1
		fake := c.Agents["fake"]
		c.Agents["other"] = config.AgentConfig{Override: agents.Override{Command: testBinary(t) + " demo-agent --script " + other,
			Env: fake.Env, Markers: agents.MarkerOverride{Ready: `\? for shortcuts`, Busy: `esc to interrupt`}}}
		fake.Command += " --sessions " + sessions
		fake.ContinueCommand = fake.Command + " --continue"
		c.Agents["fake"] = fake
	}
}

// takeTheSlot labels a second issue for the other agent, checks that a dispatch pass starts it beside run r's
// idle agent, waits until r's agent gave way to it, and follows the second run to its end.
func (w *world) takeTheSlot(r *store.Run) *store.Run {
	w.t.Helper()
	second := w.gh.AddIssue(testRepo, fakegithub.IssueOptions{Title: "Second", Body: "Add GREETING.md too.", Author: "alice",
		Created: time.Now().Add(time.Minute)})
	w.gh.Label(testRepo, second, "ace", "alice")
	w.gh.Label(testRepo, second, "ace:agent:other", "alice")
	if rep := w.poll(); rep.Started != 1 {
		w.t.Fatalf("a pass started %d runs beside an idle agent, want 1: %+v", rep.Started, rep)
	}
	r = w.waitRun(r, "the idle agent gives way", workflow.AgentReleased)
	if w.sessionAlive() {
		w.t.Fatal("the released run's session is still alive")
	}
	next, err := w.svc.Store.LatestRun(context.Background(), testRepo, second)
	if err != nil {
		w.t.Fatal(err)
	}
	w.waitRun(next, "the second run ends", func(r *store.Run) bool { return r.Status.Terminal() })
	return r
}

// TestAnswerReachesAReleasedAgentInItsConversation: a run whose agent asked a question in words (.ace/QUESTION)
// waits for a human with its agent idle, holding no slot for work; another issue takes the one slot (max_concurrent
// = 1) and the idle agent gives way. The answer then takes a slot again and starts the agent in its conversation,
// the answer — exactly as written — its first message: the scripted agent sees its question before it and goes on
// with its script to the pull request.
func TestAnswerReachesAReleasedAgentInItsConversation(t *testing.T) {
	t.Parallel()
	script := "question Should the greeting be formal or casual?\nbusy 200ms\nwrite GREETING.md Good day.\\n\n" +
		"sh git add GREETING.md && git commit -q -m \"Add formal GREETING.md\"\ndone Added a formal greeting as asked.\n"
	w := newWorld(t, script, withOther(t, nil))
	most := w.sampleAgents()

	r := w.run(workflow.UntilSettled)
	if r.Status != store.StatusWaitingInput {
		t.Fatalf("run %s at %s (%s), want waiting_input", r.Status, r.Step, r.Error)
	}
	r = w.waitRun(r, "the asking agent idles", func(r *store.Run) bool { return r.Slot == store.SlotIdle })
	r = w.takeTheSlot(r)

	answer := "Formal, please: \"Good day.\" — and keep it $(short)."
	w.gh.AddComment(testRepo, testIssue, "alice", answer)
	r = w.waitRun(r, "the run ends", func(r *store.Run) bool { return r.Status.Terminal() })
	if r.Status != store.StatusDone {
		t.Fatalf("after the answer the run ended %s at %s: %s", r.Status, r.Step, r.Error)
	}
	if h, ok := w.historyOf(answer); !ok || h < 1 {
		t.Errorf("the answer reached the agent with %d earlier prompts in its conversation (found %v), want the task's before it", h, ok)
	}
	if p := w.prompts(); len(p) != 2 || p[1] != answer {
		t.Errorf("prompts %q, want the answer exactly as the second", p)
	}
	if !w.hasEvent(r, workflow.EventReleased, "gave way to") || !w.hasEvent(r, workflow.EventSession, "resumed the conversation of") {
		t.Error("no event says the agent gave way, then resumed its conversation")
	}
	if n := most.Load(); n > 1 {
		t.Fatalf("%d agents alive at once, want at most max_concurrent = 1", n)
	}
}

// TestLimitPausedAgentGivesWayAndResumes: a run whose agent hit its account's usage limit waits for the reset with
// its agent idle, holding no slot for work; a run on another agent takes the one slot and the paused agent gives
// way. At the reset the run takes the slot back and starts its agent in its conversation, the continue
// (limits.continue) its first message; the scripted agent goes on with its script to the pull request.
func TestLimitPausedAgentGivesWayAndResumes(t *testing.T) {
	t.Parallel()
	w := newWorld(t, limitScript(), withOther(t, limitTune)) // the reset 20 s after the agent announces it
	most := w.sampleAgents()
	r := w.run(untilPaused)
	if r.Status != store.StatusPausedLimit {
		t.Fatalf("run %s at %s (%s), want paused_limit", r.Status, r.Step, r.Error)
	}
	r = w.waitRun(r, "the paused agent idles", func(r *store.Run) bool { return r.Slot == store.SlotIdle })
	r = w.takeTheSlot(r)
	r = w.waitRun(r, "the run ends", func(r *store.Run) bool { return r.Status.Terminal() })
	if r.Status != store.StatusDone {
		t.Fatalf("after the reset the run ended %s at %s: %s", r.Status, r.Step, r.Error)
	}
	if h, ok := w.historyOf(w.cfg.Limits.Continue); !ok || h < 1 {
		t.Errorf("the continue reached the agent with %d earlier prompts in its conversation (found %v), want the task's before it", h, ok)
	}
	if !w.hasEvent(r, workflow.EventReleased, "gave way to") || !w.hasEvent(r, workflow.EventSession, "resumed the conversation of") {
		t.Error("no event says the agent gave way, then resumed its conversation")
	}
	if n := most.Load(); n > 1 {
		t.Fatalf("%d agents alive at once, want at most max_concurrent = 1", n)
	}
}

// testBinary is the test binary, which plays the fake agent.
func testBinary(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// TestNudgeReachesAReleasedAgentWaitingForAnAnswer: `ace nudge` to a run whose agent asked in words and was
// released is the answer it waits for: queued as the agent's next first message, the run takes the slot back and
// starts the agent in its conversation with the nudge, and the agent goes on to the pull request.
func TestNudgeReachesAReleasedAgentWaitingForAnAnswer(t *testing.T) {
	t.Parallel()
	script := "question Should the greeting be formal or casual?\nbusy 200ms\nwrite GREETING.md Good day.\\n\n" +
		"sh git add GREETING.md && git commit -q -m \"Add formal GREETING.md\"\ndone Added a greeting.\n"
	w := newWorld(t, script, withOther(t, nil))
	r := w.run(workflow.UntilSettled)
	if r.Status != store.StatusWaitingInput {
		t.Fatalf("run %s at %s (%s), want waiting_input", r.Status, r.Step, r.Error)
	}
	r = w.waitRun(r, "the asking agent idles", func(r *store.Run) bool { return r.Slot == store.SlotIdle })
	r = w.takeTheSlot(r)
	if err := w.svc.Engine.Nudge(context.Background(), r); err != nil {
		t.Fatalf("nudge the released agent: %v", err)
	}
	if workflow.Queued(r) == "" {
		t.Error("after the nudge, Queued says nothing waits for the released agent")
	}
	r = w.waitRun(r, "the run ends", func(r *store.Run) bool { return r.Status.Terminal() })
	if r.Status != store.StatusDone {
		t.Fatalf("after the nudge the run ended %s at %s: %s", r.Status, r.Step, r.Error)
	}
	if p := w.prompts(); len(p) != 2 || !strings.HasPrefix(p[1], w.cfg.Monitor.Nudge) {
		t.Errorf("prompts %q, want the nudge as the second", p)
	}
	if h, ok := w.historyOf(w.prompts()[1]); !ok || h < 1 {
		t.Errorf("the nudge reached the agent with %d earlier prompts in its conversation (found %v)", h, ok)
	}
	if !w.hasEvent(r, workflow.EventQueued, "ace nudge") || !w.hasEvent(r, workflow.EventSession, "resumed the conversation of") {
		t.Error("no event says the nudge was queued, then the conversation resumed")
	}
}
