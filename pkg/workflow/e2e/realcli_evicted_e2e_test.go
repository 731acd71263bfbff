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
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/modelserver"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// TestRealCLIAnswerResumesAnEvictedAgent: claude (the newest pinned) in tmux asks its question in words
// (.ace/QUESTION) and waits for a human with its agent idle; another issue, for the fake agent, takes the one slot
// (poll.max_concurrent = 1), and claude's idle agent gives way to it. The answer on the issue then takes the slot
// back and starts claude again in its conversation (claude --continue): the model gets the answer, byte-exact, in
// the same request as the task it was given before — its conversation went on — and goes on to the pull request.
func TestRealCLIAnswerResumesAnEvictedAgent(t *testing.T) {
	pinned := realcli.Pinned(t, "claude")
	c := pinned[len(pinned)-1]
	t.Run(c.Label(), func(t *testing.T) {
		t.Parallel()
		realcli.Require(t, c)
		if !realcli.Enter(t) {
			return
		}
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
	turns := append([]modelserver.Turn{modelserver.ReadFile("ACE_TASK.md"),
		modelserver.WriteFile(".ace/QUESTION", question+"\n"),
		modelserver.Text("I wrote my question to .ace/QUESTION and wait for the answer.")}, commitTurns()...)
	w := newRealWorld(t, c, toml, strings.Join(realIssueBody, "\n"), turns, func(cfg *config.Config) {
		cfg.Poll.MaxConcurrent = 1
		cfg.Agents["fake"] = config.AgentConfig{Command: testBinary(t) + " demo-agent --script " + other,
			Env: map[string]string{"GIT_AUTHOR_NAME": "fake agent", "GIT_AUTHOR_EMAIL": "agent@ace.invalid",
				"GIT_COMMITTER_NAME": "fake agent", "GIT_COMMITTER_EMAIL": "agent@ace.invalid"},
			Markers: config.Markers{Ready: `\? for shortcuts`, Busy: `esc to interrupt`},
			Sandbox: config.SandboxConfig{Mode: config.SandboxOff}} // it reads its script beside the test's files
	})
	ctx := context.Background()

	r := w.drive(workflow.UntilSettled, 3*time.Minute)
	if r.Status != store.StatusWaitingInput || !r.State.InWords {
		t.Fatalf("run %s at %s (%s), want waiting_input on its .ace/QUESTION\n%s", r.Status, r.Step, r.Error, w.report(r))
	}
	t.Logf("question posted after %s", time.Since(start).Round(time.Millisecond))
	second := w.gh.AddIssue(testRepo, fakegithub.IssueOptions{Title: "Second", Body: "Add GREETING.md too.", Author: "alice",
		Created: time.Now().Add(time.Minute)})
	w.gh.Label(testRepo, second, "ace", "alice")
	w.gh.Label(testRepo, second, "ace:agent:fake", "alice")
	var rep workflow.PollReport
	if err := w.svc.Queue.DispatchRepos(ctx, []string{testRepo}, 1, &rep); err != nil || rep.Started != 1 {
		t.Fatalf("a pass beside the idle agent started %d runs (%v, %v), want 1", rep.Started, err, rep.Errors)
	}
	r = w.drive(func(r *store.Run) bool { return r.Status.Terminal() || workflow.AgentReleased(r) }, 2*time.Minute)
	if !workflow.AgentReleased(r) {
		t.Fatalf("claude's idle agent did not give way: run %s at %s\n%s", r.Status, r.Step, w.report(r))
	}
	if alive, _ := w.svc.Tmux.HasSession(ctx, r.Session); alive {
		t.Fatalf("the agent's session is alive after it gave way\n%s", w.report(r))
	}
	next, err := w.svc.Store.LatestRun(ctx, testRepo, second)
	if err != nil {
		t.Fatal(err)
	}
	fctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := w.svc.Engine.Follow(fctx, next, func(r *store.Run) bool { return r.Status.Terminal() }); err != nil || next.Status != store.StatusDone {
		t.Fatalf("the second run: %s at %s: %s (%v)\n%s", next.Status, next.Step, next.Error, err, w.events(next))
	}
	t.Logf("the second issue's pull request after %s", time.Since(start).Round(time.Millisecond))

	w.gh.AddComment(testRepo, testIssue, "alice", realAnswer)
	r = w.drive(untilEnded, 3*time.Minute)
	t.Logf("run %s after %s", r.Status, time.Since(start).Round(time.Millisecond))
	if r.Status != store.StatusDone {
		t.Fatalf("after the answer the run is %s at %s (%s)\n%s", r.Status, r.Step, r.Error, w.report(r))
	}
	went := false
	for _, q := range w.srv.ModelRequests() {
		if slices.Contains(q.UserTexts, realAnswer) {
			// The task's prompt is in the same request: the model saw the answer after its earlier turns.
			went = slices.ContainsFunc(q.UserTexts, func(s string) bool { return strings.Contains(s, "ACE_TASK.md") })
			break
		}
	}
	if !went {
		t.Errorf("the answer did not reach the model byte-exact in the conversation that asked\n%s", w.report(r))
	}
	ev := w.events(r)
	if !strings.Contains(ev, "gave way to "+testRepo+fmt.Sprintf("#%d", second)) || !strings.Contains(ev, "resumed the conversation of "+c.Name) {
		t.Errorf("want the agent to give way, then its conversation resumed:\n%s", ev)
	}
	if len(w.gh.PRs(testRepo)) != 2 {
		t.Errorf("%d pull requests, want one per issue", len(w.gh.PRs(testRepo)))
	}
}
