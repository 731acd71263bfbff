package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aceworks/ace/internal/fakegithub"
	"github.com/aceworks/ace/internal/gittest"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// movedScript does the task, or — given a round in .ace/FOLLOWUP.md — keeps a copy of the round's file, of the
// repository's setup's mark and of `git status` (outside the working copy, for the test) and pushes a fix. Its two
// turns are alike: the terminal agent on the new host starts a conversation of its own, at the first turn; the
// headless one goes on from where its script stopped (one --state for both hosts here).
func movedScript(out string) string {
	turn := fmt.Sprintf(`busy 200ms
sh if test -f .ace/FOLLOWUP.md; then cp .ace/FOLLOWUP.md %[1]s/round.md; cp .ace/setup-ran %[1]s/setup.txt; git status --porcelain > %[1]s/status.txt; echo hello > GREETING.md; git commit -q -am "Fix the greeting"; else echo hi > GREETING.md; git add GREETING.md; git commit -q -m "Add GREETING.md"; fi
done Done.
`, out)
	return turn + turn
}

// loseHost ends this world's host as a machine that is lost: its ace, its agents (the tmux server) and its disk —
// the working copies, ace's records of them, the mirrors. The store, shared in a fleet, stays.
func (w *world) loseHost() {
	w.t.Helper()
	w.stopQueue()
	if err := w.svc.Tmux.KillServer(context.Background()); err != nil {
		w.t.Fatal(err)
	}
	w.killHeadless()
	for _, dir := range []string{"worktrees", "records", "mirrors", filepath.Join("run", "headless")} {
		if err := os.RemoveAll(filepath.Join(w.cfg.Workspace.Root, dir)); err != nil {
			w.t.Fatal(err)
		}
	}
}

// moveTo gives run r to host to, as a live host does with the runs of a dead one (queue's moveRunsOfDeadHosts),
// and opens ace as that host: its own name and tmux server, on the same store.
func (w *world) moveTo(r *store.Run, to string) *store.Run {
	w.t.Helper()
	ctx := context.Background()
	fresh, err := w.svc.Store.GetRun(ctx, r.ID)
	if err != nil {
		w.t.Fatal(err)
	}
	from := fresh.Host
	if err := w.svc.Engine.MoveRun(ctx, fresh, to, workflow.EventMoved, "host "+from+" stopped answering (test)"); err != nil {
		w.t.Fatal(err)
	}
	w.cfg.Host.Name = to
	w.cfg.Tmux.Socket += "-" + to
	w.open()
	return fresh
}

// TestMovedRunsRoundStartsOnItsNewHost: a run whose pull request is followed, between rounds, on host alpha;
// alpha is lost (its ace, its agents, its disk) and the run moves to beta. When CI fails, beta makes the run a
// working copy from the pull request's branch — with ace's record of it, the repository's setup run in it,
// ACE_TASK.md and the round's .ace/FOLLOWUP.md, both kept out of commits — and starts a new agent, as an event
// says: the old one's conversation stayed on alpha (ace does not continue one it does not have). The new agent's
// first prompt carries the task and the round, and its fix is pushed to the same pull request. The same with the
// terminal agent and the headless one.
func TestMovedRunsRoundStartsOnItsNewHost(t *testing.T) {
	t.Parallel()
	for _, runner := range []string{"tmux", "exec"} {
		t.Run(runner, func(t *testing.T) {
			t.Parallel()
			movedRound(t, runner == "exec")
		})
	}
}

func movedRound(t *testing.T, headless bool) {
	out := t.TempDir()
	sessions := filepath.Join(t.TempDir(), "sessions") // shared by the hosts here: a wrong continue would show
	tune := func(c *config.Config) {
		c.PR.Follow = true
		c.Host.Name = "alpha"
		// The repository's setup marks the working copy it ran in.
		c.Repos = map[string]config.RepoWorkflow{testRepo: {Setup: []config.Command{{"sh", "-c", "mkdir -p .ace && touch .ace/setup-ran"}}}}
		if !headless {
			fake := c.Agents["fake"]
			fake.Command += " --sessions " + sessions
			fake.ContinueCommand = fake.Command + " --continue"
			c.Agents["fake"] = fake
		}
	}
	var w *world
	if headless {
		w = newHeadlessWorld(t, "claude", movedScript(out), tune)
	} else {
		w = newWorld(t, movedScript(out), tune)
	}
	w.gh.SetGitDir(testRepo, w.remote)
	r := w.run(workflow.UntilSettled)
	if r.Step != string(workflow.StepFollowPR) || r.PRNumber == 0 {
		t.Fatalf("run %s at %s (%s), want its pull request followed", r.Status, r.Step, r.Error)
	}
	sha1 := w.gh.HeadSHA(testRepo, r.PRNumber)

	w.loseHost()
	r = w.moveTo(r, "beta")
	w.gh.AddCheckRun(testRepo, fakegithub.CheckRun{HeadSHA: sha1, Name: "build", Conclusion: "failure", Title: "does not compile"})
	r = w.waitRun(r, "round 1 pushed from beta", func(r *store.Run) bool { return roundDone(r, 1) })

	if r.Host != "beta" {
		t.Errorf("the round ran on host %q, want beta", r.Host)
	}
	sha2 := w.gh.HeadSHA(testRepo, r.PRNumber)
	if sha2 == sha1 || len(w.gh.PRs(testRepo)) != 1 {
		t.Fatalf("head %s (was %s), %d pull requests: want the fix pushed to the one pull request", sha2, sha1, len(w.gh.PRs(testRepo)))
	}
	if files := gittest.Run(t, w.remote, "ls-tree", "-r", "--name-only", sha2); strings.Contains(files, "ACE_TASK.md") ||
		strings.Contains(files, ".ace/") || !strings.Contains(files, "GREETING.md") {
		t.Errorf("the pushed fix holds %q: want GREETING.md, none of ace's files", files)
	}
	if log := gittest.Run(t, w.remote, "log", "--format=%s", sha2); !strings.Contains(log, "Fix the greeting\nAdd GREETING.md") {
		t.Errorf("the branch's log:\n%s\nwant the fix on top of the commit made on alpha", log)
	}
	if b, err := os.ReadFile(filepath.Join(out, "round.md")); err != nil || !strings.Contains(string(b), "`build` failed") {
		t.Errorf("the agent on beta found no round in .ace/FOLLOWUP.md: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(out, "setup.txt")); err != nil {
		t.Errorf("the repository's setup did not run in the new working copy: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(out, "status.txt")); err != nil || len(b) != 0 {
		t.Errorf("git status in the new working copy, before the fix: %q (%v), want ace's files excluded", b, err)
	}
	var rec struct{ Branch, Repo string }
	b, err := os.ReadFile(filepath.Join(w.cfg.Workspace.Root, "records", "acme", "widgets", fmt.Sprint(testIssue)+".json"))
	if err != nil || json.Unmarshal(b, &rec) != nil || rec.Branch != r.Branch || rec.Repo != testRepo {
		t.Errorf("ace's record of the new working copy: %s (%v), want one of branch %s", b, err, r.Branch)
	}

	p := w.prompts()
	if len(p) != 2 {
		t.Fatalf("prompts %q, want the task on alpha and the round on beta", p)
	}
	for _, want := range []string{"ACE_TASK.md", fmt.Sprintf("issue #%d", testIssue), r.Branch, `check "build" failed`, ".ace/FOLLOWUP.md"} {
		if !strings.Contains(p[1], want) {
			t.Errorf("the round's prompt on beta lacks %q:\n%s", want, p[1])
		}
	}
	if headless {
		if turns := w.turns(); turns[1].SessionID == turns[0].SessionID || slices.Contains(turns[1].Argv, "--resume") {
			t.Errorf("turns %+v: want the round in a new conversation", turns)
		}
	} else if h, ok := w.historyOf(`check "build" failed`); !ok || h != 0 {
		t.Errorf("the round's prompt reached a conversation with %d earlier prompts (found %v): want a new agent's", h, ok)
	}
	if !w.hasEvent(r, workflow.EventSession, "conversation stayed on the host") {
		t.Errorf("no event says the agent's conversation stayed on the old host:\n%s", w.eventLog(r))
	}
}

// TestMovedPausedRunSeesItsLimitAgain: a run paused at a usage limit on host alpha moves to beta when alpha is lost,
// and starts again there (a new working copy, a new agent). The limit is the account's: the new agent hits it too,
// and the run pauses again — the limit the old agent's screen showed is not taken for the new one's, which would
// hide it (the agent idle at the limit message went to a human as a question) — and resumes at the reset, to
// its pull request.
func TestMovedPausedRunSeesItsLimitAgain(t *testing.T) {
	t.Parallel()
	w := newWorld(t, limitScript(), func(c *config.Config) {
		limitTune(c)
		c.Host.Name = "alpha"
	})
	r := w.run(untilPaused)
	if r.Status != store.StatusPausedLimit {
		t.Fatalf("run %s at %s (%s), want paused_limit", r.Status, r.Step, r.Error)
	}
	w.loseHost()
	r = w.moveTo(r, "beta")
	r = w.waitRun(r, "paused on beta", func(r *store.Run) bool {
		return r.Status == store.StatusPausedLimit || r.Status == store.StatusWaitingInput || workflow.UntilSettled(r)
	})
	if r.Status != store.StatusPausedLimit {
		t.Fatalf("on beta the run is %s at %s (%s), want paused at the limit again:\n%s", r.Status, r.Step, r.Error, w.eventLog(r))
	}
	r = w.waitRun(r, "the run ends", func(r *store.Run) bool { return r.Status.Terminal() || r.Status == store.StatusWaitingInput })
	if r.Status != store.StatusDone || len(w.gh.PRs(testRepo)) != 1 {
		t.Fatalf("after the reset the run is %s at %s (%s), %d pull requests:\n%s", r.Status, r.Step, r.Error,
			len(w.gh.PRs(testRepo)), w.eventLog(r))
	}
}

// TestMovedMidRoundIsToldWhatTheRoundWas: a round's agent asks a question, and its host (alpha) is lost while the
// run waits for the answer; the run starts again on beta from the pull request's branch, in the same round. The
// round's details stayed with alpha's working copy: the new copy's .ace/FOLLOWUP.md, which the round's prompt
// points at, says what the round is about and where the pull request is; the new agent's fix is pushed.
func TestMovedMidRoundIsToldWhatTheRoundWas(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	sessions := filepath.Join(t.TempDir(), "sessions")
	turn := strings.SplitAfterN(movedScript(out), "done Done.\n", 2)[0]
	w := newWorld(t, turn+"question Which greeting do you want?\n"+turn, func(c *config.Config) {
		c.PR.Follow = true
		c.Host.Name = "alpha"
		fake := c.Agents["fake"]
		fake.Command += " --sessions " + sessions
		c.Agents["fake"] = fake
	})
	w.gh.SetGitDir(testRepo, w.remote)
	r := w.run(workflow.UntilSettled)
	if r.Step != string(workflow.StepFollowPR) {
		t.Fatalf("run %s at %s (%s), want its pull request followed", r.Status, r.Step, r.Error)
	}
	w.gh.AddCheckRun(testRepo, fakegithub.CheckRun{HeadSHA: w.gh.HeadSHA(testRepo, r.PRNumber), Name: "build",
		Conclusion: "failure", Title: "does not compile"})
	r = w.waitRun(r, "the round's question", func(r *store.Run) bool { return r.Status == store.StatusWaitingInput })

	w.loseHost()
	r = w.moveTo(r, "beta")
	r = w.waitRun(r, "round 1 pushed from beta", func(r *store.Run) bool { return roundDone(r, 1) })
	b, err := os.ReadFile(filepath.Join(out, "round.md"))
	if err != nil || !strings.Contains(string(b), "check build failed") || !strings.Contains(string(b), r.PRURL) {
		t.Errorf("the new working copy's .ace/FOLLOWUP.md: %q (%v), want the round's topic and the pull request", b, err)
	}
	if p := w.prompts(); len(p) != 3 || !strings.Contains(p[2], `check "build" failed`) || !strings.Contains(p[2], "ACE_TASK.md") {
		t.Errorf("prompts %q, want the task, the round and the round again on beta, with the task", p)
	}
}
