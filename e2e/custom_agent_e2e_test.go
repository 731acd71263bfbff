package e2e_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// customAgent makes the world's agent a custom command agent (not a built-in profile) that leaves its output on
// screen — "working on it (N)" lines and "all done" stay above its "READY>" prompt — described only by the
// markers its user would write. flags are more of the scripted agent's flags.
func customAgent(w *world, flags string) func(*config.Config) {
	return func(c *config.Config) {
		fake := c.Agents["fake"]
		fake.Command = fmt.Sprintf("%s demo-agent --script %s --record %s --ready-marker READY> --status-line '' %s",
			w.bin, w.script, w.recordPath(), flags)
		fake.Markers = agents.MarkerOverride{Ready: `READY>`, Busy: `working on it|esc to interrupt`}
		c.Agents = map[string]config.AgentConfig{"mine": fake}
		c.Agent.Default = "mine"
	}
}

// customScript: the first prompt gets output and no work (the agent stops: ace must nudge it), the nudge gets the
// work and ace's done protocol, the follow-up round gets a fix.
const customScript = `say working on it (1)
busy 300ms
say working on it (2)
say all done
idle
say working on it (3)
write GREETING.md hi\n
sh git add GREETING.md && git commit -q -m "Add GREETING.md"
say all done
done Added GREETING.md.
say working on it (4)
write GREETING.md Hello!\n
sh git commit -q -am "Capitalize the greeting"
say all done
done Capitalized the greeting.
`

// TestCustomAgentLeavingOutputOnScreen: a custom command agent whose busy lines stay on screen above its ready
// prompt is read from the bottom up — taken for ready once it draws its prompt, never busy for ever — so it gets
// its prompt, a nudge when it stops without finishing, and a review round on its pull request.
func TestCustomAgentLeavingOutputOnScreen(t *testing.T) {
	t.Parallel()
	w := newWorld(t, customScript, nil)
	customAgent(w, "")(w.cfg)
	w.cfg.PR.Follow = true
	w.cfg.Monitor.IdleAfter = config.Duration{Duration: 2 * time.Second}
	w.gh.SetGitDir(testRepo, w.remote)
	w.gh.SetPermission(testRepo, "carol", "write")
	w.open()

	r := w.run(workflow.UntilSettled)
	if r.Step != string(workflow.StepFollowPR) || r.PRNumber == 0 {
		t.Fatalf("run %s at %s (%s), want its pull request followed", r.Status, r.Step, r.Error)
	}
	if r.Nudges != 1 {
		t.Errorf("nudges %d, want 1 (the agent stopped once without finishing)", r.Nudges)
	}
	w.gh.AddReview(testRepo, r.PRNumber, "carol", "CHANGES_REQUESTED", "Capitalize the greeting, please.")
	r = w.waitRun(r, "the review round pushed", func(r *store.Run) bool { return roundDone(r, 1) })
	w.gh.MergePR(testRepo, r.PRNumber)
	r = w.waitRun(r, "the run ended", func(r *store.Run) bool { return r.Status.Terminal() })
	if r.Status != store.StatusDone {
		t.Fatalf("run %s at %s: %s", r.Status, r.Step, r.Error)
	}
	p := w.prompts()
	if len(p) != 3 || !strings.Contains(p[0], "ACE_TASK.md") || !strings.HasPrefix(p[1], w.cfg.Monitor.Nudge) || !strings.Contains(p[2], "Capitalize the greeting, please.") {
		t.Fatalf("prompts %q, want the task, one nudge and the review round", p)
	}
	if r.State.Questions != 0 {
		t.Errorf("%d questions went to a human", r.State.Questions)
	}
}

// TestCustomAgentKilledDuringDelivery: ace is killed (kill -9) while it delivers the prompt to such an agent —
// here while the agent is slow to show the paste — and the restarted ace finds the prompt pasted and submits
// it, or finds the agent already working on it: one delivery, no question to a human, a pull request.
func TestCustomAgentKilledDuringDelivery(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "say working on it (1)\nbusy 1s\n"+workScript, nil)
	customAgent(w, "--paste-lag 3s")(w.cfg)
	ctx := context.Background()
	cmd := w.aceCmd("run", "--issue", "193")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline) && !killed; time.Sleep(2 * time.Millisecond) {
		r, err := w.svc.Store.LatestRun(ctx, testRepo, testIssue)
		if err == nil && r.Step == string(workflow.StepDeliver) && !r.State.PastedAt.IsZero() {
			// The paste follows the saved intent at once, and the agent shows it only 3 s later: a kill a moment
			// after the intent lands between the paste and the Enter (no event marks that window).
			time.Sleep(700 * time.Millisecond)
			_ = cmd.Process.Signal(syscall.SIGKILL)
			killed = true
		}
	}
	_ = cmd.Wait()
	if !killed {
		t.Fatal("ace never set out to paste the prompt")
	}
	out, err := w.aceCmd("run", "--issue", "193").CombinedOutput()
	if err != nil {
		t.Fatalf("ace run after the kill: %v\n%s", err, out)
	}
	r, err := w.svc.Store.LatestRun(ctx, testRepo, testIssue)
	if err != nil || r.Status != store.StatusDone {
		t.Fatalf("after the kill: run %+v %v\n%s", r, err, out)
	}
	if p := w.prompts(); len(p) != 1 || strings.Count(p[0], "Read ACE_TASK.md") != 1 {
		t.Errorf("the agent got %d prompts, want the task once: %q", len(p), p)
	}
	if r.State.Questions != 0 {
		t.Errorf("%d questions went to a human", r.State.Questions)
	}
	evs, _ := w.svc.Store.Events(ctx, r.ID)
	if !slices.ContainsFunc(evs, func(e store.Event) bool { return e.Kind == "prompt" }) {
		t.Errorf("no prompt event:\n%s", out)
	}
}
