package e2e_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/fakegithub"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// TestReleasedRunsRoundResumesItsConversation: a followed pull request's agent is released after
// pr.release_after; the round a CI failure brings starts the agent again with its continue_command, in the
// conversation it had: the scripted agent sees its earlier prompts and goes on with its script where it stopped,
// doing the round's work, not the task's first steps again.
func TestReleasedRunsRoundResumesItsConversation(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	w, r := releasedFollowing(t, out)
	w.gh.AddCheckRun(testRepo, fakegithub.CheckRun{HeadSHA: w.gh.HeadSHA(testRepo, r.PRNumber), Name: "build",
		Conclusion: "failure", Title: "does not compile"})
	r = w.waitRun(r, "round 1 pushed", func(r *store.Run) bool { return roundDone(r, 1) })

	// The round's work is the script's second part (it copies the round's file), not the task's first steps.
	if b, err := os.ReadFile(filepath.Join(out, "round1.md")); err != nil || !strings.Contains(string(b), "`build` failed") {
		t.Errorf("the resumed agent did not do the round's part of its script: %q, %v", b, err)
	}
	var round struct {
		Prompt  string `json:"prompt"`
		History int    `json:"history"`
	}
	b, err := os.ReadFile(w.recordPath())
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var rec struct {
			Prompt  string `json:"prompt"`
			History int    `json:"history"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && strings.Contains(rec.Prompt, `check "build" failed`) {
			round = rec
		}
	}
	if round.Prompt == "" || round.History < 1 {
		t.Fatalf("the round's prompt reached the agent with %d earlier prompts in its conversation, want the task's "+
			"before it (prompt %q)", round.History, round.Prompt)
	}
	evs, err := w.svc.Store.Events(context.Background(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	resumed := false
	for _, ev := range evs {
		resumed = resumed || ev.Kind == "session" && strings.Contains(ev.Message, "resumed the conversation of")
	}
	if !resumed {
		t.Error("no event says the agent's conversation was resumed")
	}
}

// TestReleaseWaitsForTheTurnToEnd: an agent still working after it wrote .ace/DONE (its last reply on its way)
// is released only once its turn has ended. Stopped mid-turn, its conversation lacks the turn's end: gemini,
// released a second after .ace/DONE on a loaded machine, had not recorded its last reply, and the next round's
// prompt was answered as the end of the round before.
func TestReleaseWaitsForTheTurnToEnd(t *testing.T) {
	t.Parallel()
	ended := filepath.Join(t.TempDir(), "turn-ended")
	w := newWorld(t, `write GREETING.md hi\n
sh git add GREETING.md && git commit -q -m "Add GREETING.md"
write .ace/DONE Added GREETING.md.\n
busy 3s
write `+ended+` yes\n
idle
`, func(c *config.Config) {
		c.PR.Follow = true
		c.PR.ReleaseAfter = config.Duration{Duration: time.Second}
	})
	w.gh.SetGitDir(testRepo, w.remote)
	r := w.run(workflow.UntilSettled)
	if r.Step != string(workflow.StepFollowPR) {
		t.Fatalf("run at %s (%s)", r.Step, r.Error)
	}
	w.waitRun(r, "the agent is released", func(r *store.Run) bool { return workflow.AgentReleased(r) })
	if _, err := os.Stat(ended); err != nil {
		t.Errorf("the agent was released before its turn ended: %v", err)
	}
}

// TestSendToReleasedAgentResumesItsConversation: `ace send` to a run whose agent was released (pr.release_after)
// queues the text as the agent's next first message, says so, and wakes the run: it takes a slot, its agent starts
// again in its conversation with the text, byte-exact, does what it asks, and the round is pushed to the pull
// request.
func TestSendToReleasedAgentResumesItsConversation(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	w, r := releasedFollowing(t, out)

	// `ace send` is a process of its own, as a user's: it queues the text and wakes the run this ace works.
	text := "Please write a test for the greeting:\n  it must say hello."
	said, err := w.aceCmd("send", "193", text).CombinedOutput()
	if err != nil || !strings.Contains(string(said), "queued for the released agent of acme/widgets#193: it starts again in its conversation") {
		t.Fatalf("ace send to the released agent: %v\n%s", err, said)
	}
	r = w.waitRun(r, "the sent round pushed", func(r *store.Run) bool { return roundDone(r, 1) })

	// The text was the first message of the resumed conversation, as sent; the agent went on with its script.
	if h, ok := w.historyOf(text); !ok || h < 1 || !slices.Contains(w.prompts(), text) {
		t.Fatalf("the sent text reached the agent with %d earlier prompts in its conversation (found %v), want it "+
			"exactly, with the task's before it: prompts %q", h, ok, w.prompts())
	}
	if b, err := os.ReadFile(filepath.Join(out, "round1.md")); err != nil || !strings.Contains(string(b), "it must say hello") {
		t.Errorf("the resumed agent did not go on with its script, the message in its round's file: %q, %v", b, err)
	}
	if r.State.ResumeWith != "" {
		t.Errorf("the sent text is still queued after its delivery: %q", r.State.ResumeWith)
	}
	if !w.hasEvent(r, workflow.EventQueued, "ace send") || !w.hasEvent(r, workflow.EventRound, "a message sent to the agent") {
		t.Error("no event says the text was queued, then sent as a round")
	}
}

// releasedFollowing runs issue 193 with the follow script (its rounds' files copied to out) to its pull request,
// and waits until its agent is released (pr.release_after); the fake agent keeps its conversation for a resume.
func releasedFollowing(t *testing.T, out string) (*world, *store.Run) {
	t.Helper()
	sessions := filepath.Join(t.TempDir(), "sessions")
	w := newWorld(t, followScript(out), func(c *config.Config) {
		c.PR.Follow = true
		c.PR.ReleaseAfter = config.Duration{Duration: time.Second}
		fake := c.Agents["fake"]
		fake.Command += " --sessions " + sessions
		fake.ContinueCommand = fake.Command + " --continue"
		c.Agents["fake"] = fake
	})
	w.gh.SetGitDir(testRepo, w.remote)
	r := w.run(workflow.UntilSettled)
	if r.Step != string(workflow.StepFollowPR) {
		t.Fatalf("run at %s (%s)", r.Step, r.Error)
	}
	return w, w.waitRun(r, "the agent is released", workflow.AgentReleased)
}
