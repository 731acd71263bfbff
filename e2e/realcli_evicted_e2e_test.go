package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/fakegithub"
	"github.com/aceworks/ace/internal/realcli"
	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/modelserver"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// realCLIEvictedAgentResumesItsConversation: claude (the newest pinned) in tmux, with one slot
// (poll.max_concurrent = 1) and pr.release_after as it comes, against issues for the fake agent that take the slot
// whenever claude's agent idles:
//   - claude asks its question in words (.ace/QUESTION) and waits for a human, its agent idle; a second issue
//     takes the slot and claude's agent gives way (released). The answer on the issue takes the slot back (the
//     second run's agent, idle on its open pull request, gives way) and starts claude again in its conversation
//     (claude --continue), the answer byte-exact its first message;
//   - claude opens its pull request and idles; a third issue takes the slot, claude gives way again. A failed check
//     on claude's pull request then takes the slot back, and the round's prompt reaches the same conversation.
//
// The model gets the answer, and then the round, in requests that hold the task it was given first.
func realCLIEvictedAgentResumesItsConversation(t *testing.T, cs *realcli.Cases) {
	pinned := realcli.Pinned(t, "claude")
	c := pinned[len(pinned)-1]
	cs.Run(c.Label(), c, func(t *testing.T) {
		runEvictedCase(t, c)
	})
}

func runEvictedCase(t *testing.T, c realcli.CLI) {
	start := time.Now()
	other := filepath.Join(t.TempDir(), "other-script.txt")
	if err := os.WriteFile(other, []byte(workScript), 0o644); err != nil {
		t.Fatal(err)
	}
	toml := fmt.Sprintf("[agent]\ndefault = %q\n\n[agents.%s]\nauto_approve = true\n", c.Name, c.Name)
	turns := []modelserver.Turn{modelserver.ReadFile("ACE_TASK.md"), modelserver.WriteFile(".ace/QUESTION", question+"\n"),
		modelserver.Text("I wrote my question to .ace/QUESTION and wait for the answer.")}
	turns = append(append(turns, commitTurns()...), modelserver.Text("I added a formal GREETING.md."),
		// The round: a check failed; its output is in .ace/FOLLOWUP.md.
		modelserver.ReadFile(".ace/FOLLOWUP.md"),
		modelserver.Shell(`printf 'Good day!\n' > GREETING.md && git commit -q -am "Fix the greeting test"`),
		modelserver.WriteFile(".ace/DONE", "Fixed the failing test.\n"),
		modelserver.Text("I fixed the failing test."))
	w := newRealWorld(t, c, toml, strings.Join(realIssueBody, "\n"), turns, func(cfg *config.Config) {
		cfg.Poll.MaxConcurrent = 1
		cfg.PR.Follow = true
		cfg.Agents["fake"] = config.AgentConfig{Override: agents.Override{Command: testBinary(t) + " demo-agent --script " + other,
			Env: map[string]string{"GIT_AUTHOR_NAME": "fake agent", "GIT_AUTHOR_EMAIL": "agent@ace.invalid",
				"GIT_COMMITTER_NAME": "fake agent", "GIT_COMMITTER_EMAIL": "agent@ace.invalid"},
			Markers: agents.MarkerOverride{Ready: `\? for shortcuts`, Busy: `esc to interrupt`}},
			Sandbox: config.SandboxConfig{Mode: config.SandboxOff}} // it reads its script beside the test's files
	})
	w.gh.SetGitDir(testRepo, w.remote)
	took := func(what string) { t.Logf("%s after %s", what, time.Since(start).Round(time.Millisecond)) }

	r := w.drive(workflow.UntilSettled, 3*time.Minute)
	if r.Status != store.StatusWaitingInput || !r.State.InWords {
		t.Fatalf("run %s at %s (%s), want waiting_input on its .ace/QUESTION\n%s", r.Status, r.Step, r.Error, w.report(r))
	}
	took("question posted")
	second := w.evictFor("Second")
	took("claude gave way to the second issue")

	w.gh.AddComment(testRepo, testIssue, "alice", realAnswer)
	r = w.drive(func(r *store.Run) bool { return r.Status.Terminal() || r.PRNumber != 0 && r.Slot == store.SlotIdle }, 3*time.Minute)
	if r.PRNumber == 0 || r.Status.Terminal() {
		t.Fatalf("after the answer the run is %s at %s (%s)\n%s", r.Status, r.Step, r.Error, w.report(r))
	}
	took("claude's pull request opened")
	if !w.sawInConversation(realAnswer) || !slices.Contains(w.srv.UserTexts(), realAnswer) {
		t.Errorf("the answer did not reach the model byte-exact in the conversation that asked\n%s", w.report(r))
	}
	third := w.evictFor("Third")
	took("claude gave way to the third issue")

	w.gh.AddCheckRun(testRepo, fakegithub.CheckRun{HeadSHA: w.gh.HeadSHA(testRepo, r.PRNumber), Name: "test",
		Conclusion: "failure", Title: "1 test failed", Summary: "TestGreeting failed"})
	r = w.drive(func(r *store.Run) bool { return r.Status.Terminal() || roundDone(r, 1) }, 3*time.Minute)
	if !roundDone(r, 1) {
		t.Fatalf("round 1: run %s at %s (%s)\n%s", r.Status, r.Step, r.Error, w.report(r))
	}
	took("round 1 pushed")
	if !w.sawInConversation(`check "test" failed (failure): 1 test failed`) {
		t.Errorf("the round's prompt did not reach the model in the conversation that did the task\n%s", w.report(r))
	}
	ev := w.events(r)
	for _, n := range []int{second, third} {
		if !strings.Contains(ev, fmt.Sprintf("gave way to %s#%d", testRepo, n)) {
			t.Errorf("claude's agent did not give way to issue %d:\n%s", n, ev)
		}
	}
	if n := strings.Count(ev, "resumed the conversation of "+c.Name); n != 2 {
		t.Errorf("want the answer and the round each to resume claude's conversation, got %d:\n%s", n, ev)
	}
}

// evictFor labels an issue titled title for the fake agent and makes a dispatch pass, which starts it beside
// the idle agent of issue 193's run; that agent gives way to it. It follows the new run until it idles on its pull
// request and returns its issue.
func (w *realWorld) evictFor(title string) int {
	w.t.Helper()
	ctx := context.Background()
	n := w.gh.AddIssue(testRepo, fakegithub.IssueOptions{Title: title, Body: "Add GREETING.md too.", Author: "alice",
		Created: time.Now().Add(time.Minute)})
	w.gh.Label(testRepo, n, "ace", "alice")
	w.gh.Label(testRepo, n, "ace:agent:fake", "alice")
	var rep workflow.PollReport
	if err := w.svc.Queue.DispatchRepos(ctx, []string{testRepo}, 1, &rep); err != nil || rep.Started != 1 {
		w.t.Fatalf("a pass beside the idle agent started %d runs (%v, %v), want 1", rep.Started, err, rep.Errors)
	}
	r := w.drive(func(r *store.Run) bool { return r.Status.Terminal() || workflow.AgentReleased(r) }, 2*time.Minute)
	if !workflow.AgentReleased(r) {
		w.t.Fatalf("claude's idle agent did not give way: run %s at %s\n%s", r.Status, r.Step, w.report(r))
	}
	if alive, _ := w.svc.Tmux.HasSession(ctx, r.Session); alive {
		w.t.Fatalf("the agent's session is alive after it gave way\n%s", w.report(r))
	}
	next, err := w.svc.Store.LatestRun(ctx, testRepo, n)
	if err != nil {
		w.t.Fatal(err)
	}
	fctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := w.svc.Engine.Follow(fctx, next, func(r *store.Run) bool { return r.Status.Terminal() || r.Slot == store.SlotIdle }); err != nil ||
		next.PRNumber == 0 {
		w.t.Fatalf("issue %d: %s at %s: %s (%v)\n%s", n, next.Status, next.Step, next.Error, err, w.events(next))
	}
	return n
}

// sawInConversation reports whether a model request held text in a user message together with the task's prompt
// from the conversation's start: text reached the conversation that did the earlier work.
func (w *realWorld) sawInConversation(text string) bool {
	for _, q := range w.srv.ModelRequests() {
		if slices.ContainsFunc(q.UserTexts, func(s string) bool { return strings.Contains(s, text) }) &&
			slices.ContainsFunc(q.UserTexts, func(s string) bool { return strings.Contains(s, "ACE_TASK.md") }) {
			return true
		}
	}
	return false
}
