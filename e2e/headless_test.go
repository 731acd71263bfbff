package e2e_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/gittest"
	"github.com/aceworks/ace/internal/testkit"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/headless"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

const fakeSecret = "fake-agent-secret-value-42"

// TestHeadlessIssueBecomesPullRequest runs issue 193 through the graph with the headless runner, once per stream
// shape. While the agent runs, it snapshots every process's command line and checks it has its secret.
func TestHeadlessIssueBecomesPullRequest(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"claude", "codex", "gemini"} {
		t.Run(format, func(t *testing.T) {
			probe := t.TempDir()
			script := `say Reading ACE_TASK.md.
sh for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' < $f 2>/dev/null; echo; done > ` + probe + `/cmdlines
sh test -n "$FAKE_AGENT_KEY" && touch ` + probe + `/has-key
sh echo "$HOME" > ` + probe + `/home
` + workScript
			w := newHeadlessWorld(t, format, script, func(c *config.Config) {
				a := c.Agents["fake"]
				a.Home = "isolated"
				c.Agents["fake"] = a
			})
			r := w.run(workflow.UntilSettled)
			if r.Status != store.StatusDone {
				t.Fatalf("run ended %s at %s: %s\n%s", r.Status, r.Step, r.Error, w.eventLog(r))
			}
			if r.Runner != "exec" || r.Session != "" {
				t.Errorf("runner %q session %q, want exec without tmux session", r.Runner, r.Session)
			}
			prs := w.gh.PRs(testRepo)
			if len(prs) != 1 || !strings.Contains(prs[0].Body, "Closes #193") || prs[0].Head != r.Branch {
				t.Fatalf("pull requests %+v, want one from %s closing #193", prs, r.Branch)
			}
			if got := gittest.Run(t, w.remote, "show", r.Branch+":GREETING.md"); got != "Hello from the fake agent!" {
				t.Errorf("pushed GREETING.md = %q", got)
			}
			if left, _ := filepath.Glob(filepath.Join(w.cfg.Workspace.Root, "run", "headless", "*")); len(left) != 0 {
				t.Errorf("turn files left after the run: %v", left)
			}
			turns := w.turns()
			if len(turns) != 1 || !strings.Contains(turns[0].Prompt, "ACE_TASK.md") || turns[0].SessionID != r.AgentSessionID {
				t.Fatalf("turns %+v, want one with the task prompt in session %s", turns, r.AgentSessionID)
			}
			for _, a := range turns[0].Argv {
				if strings.Contains(a, "ACE_TASK.md") {
					t.Errorf("the prompt went into argv: %q", turns[0].Argv)
				}
			}
			tr := w.transcript(r)
			if tr.SessionID != r.AgentSessionID || tr.Raw != 0 || tr.Usage.OutputTokens == 0 {
				t.Errorf("transcript session %q raw %d usage %+v", tr.SessionID, tr.Raw, tr.Usage)
			}
			var kinds []headless.Kind
			for _, e := range tr.Events {
				kinds = append(kinds, e.Kind)
			}
			for _, k := range []headless.Kind{headless.KindInit, headless.KindAssistant, headless.KindToolCall, headless.KindResult} {
				if !slices.Contains(kinds, k) {
					t.Errorf("transcript lacks a %s event: %v", k, kinds)
				}
			}
			if _, err := os.Stat(filepath.Join(probe, "has-key")); err != nil {
				t.Error("the agent did not get its secret in its environment")
			}
			if home, _ := os.ReadFile(filepath.Join(probe, "home")); strings.TrimSpace(string(home)) != filepath.Join(w.cfg.Workspace.Root, "homes", "fake") {
				t.Errorf("the agent's HOME is %q, want its isolated home", home)
			}
			cmdlines, err := os.ReadFile(filepath.Join(probe, "cmdlines"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(cmdlines), "demo-agent headless") || !strings.Contains(string(cmdlines), "__headless") {
				t.Fatalf("the snapshot of command lines misses the agent or its supervisor:\n%s", cmdlines)
			}
			if strings.Contains(string(cmdlines), fakeSecret) || strings.Contains(string(cmdlines), botToken) {
				t.Error("a secret appeared in a process's command line")
			}
			assertNoSecretOnDisk(t, w, r)
			if headless.ParseProc(r.State.ExecProc).Alive() {
				t.Error("the supervisor outlived the run")
			}
		})
	}
}

// TestHeadlessSilentBusyAgentIsNotKilled: an agent silent on its stream for longer than exec_idle_timeout while
// its process tree works (a test suite that prints only at its end) is not idle: its turn goes on to the pull
// request, with no restart (max_restarts = 0 would fail the run on a kill). The same silence with nothing
// working is killed (TestHeadlessSilentAgentKilledAtIdleTimeout).
func TestHeadlessSilentBusyAgentIsNotKilled(t *testing.T) {
	t.Parallel()
	// Three idle timeouts of silence with a process working on the CPU (a quarter of a core when it has it): above
	// the 5 % of a core that counts as work, even on a loaded machine. It works on for half a timeout more, so that
	// each of the three looks falls inside its work, none at its end.
	w := newHeadlessWorld(t, "claude", "say Running the tests.\nsh "+testkit.BusyShell(10500*time.Millisecond)+"\n"+workScript, func(c *config.Config) {
		c.Monitor.ExecIdleTimeout = config.Duration{Duration: 3 * time.Second}
		c.Monitor.MaxRestarts = 0
	})
	r := w.run(workflow.UntilSettled)
	if r.Status != store.StatusDone {
		t.Fatalf("run ended %s at %s: %q\n%s", r.Status, r.Step, r.Error, w.eventLog(r))
	}
	if log := w.eventLog(r); strings.Contains(log, "exec_idle_timeout") {
		t.Errorf("the busy turn was killed as idle:\n%s", log)
	}
}

// TestHeadlessSilentAgentKilledAtIdleTimeout: an agent that stops printing, with nothing else showing work, is
// killed at exec_idle_timeout, its transcript so far is kept, and the failure is recorded on the run.
func TestHeadlessSilentAgentKilledAtIdleTimeout(t *testing.T) {
	t.Parallel()
	w := newHeadlessWorld(t, "claude", "say Let me think about this.\nhang\n", func(c *config.Config) {
		c.Monitor.ExecIdleTimeout = config.Duration{Duration: time.Second}
		c.Monitor.MaxRestarts = 0
	})
	r := w.run(workflow.UntilSettled)
	if r.Status != store.StatusFailed || !strings.Contains(r.Error, "monitor.exec_idle_timeout") {
		t.Fatalf("run ended %s: %q, want failed on exec_idle_timeout", r.Status, r.Error)
	}
	log := w.eventLog(r)
	if !strings.Contains(log, "agent-failed: turn 1: the agent was killed after 1s without output") {
		t.Errorf("no failure event for the killed turn:\n%s", log)
	}
	if texts := assistantTexts(w.transcript(r)); !slices.Contains(texts, "Let me think about this.") {
		t.Errorf("transcript lost what the agent said before it went silent: %q", texts)
	}
	status := w.statusComments()
	if len(status) != 1 || !strings.Contains(status[0], "Let me think about this.") {
		t.Errorf("status comment lacks the agent's last words: %q", status)
	}
	if !slices.Contains(w.labels(), "ace:failed") {
		t.Errorf("labels %v lack ace:failed", w.labels())
	}
}

// TestHeadlessCrashIsResumedThenFails: a non-zero exit is recorded with its stderr; the conversation is resumed
// max_restarts times, then the run fails.
func TestHeadlessCrashIsResumedThenFails(t *testing.T) {
	t.Parallel()
	w := newHeadlessWorld(t, "codex", "crash 3\ncrash 4\n", func(c *config.Config) { c.Monitor.MaxRestarts = 1 })
	r := w.run(workflow.UntilSettled)
	if r.Status != store.StatusFailed || r.Restarts != 1 || !strings.Contains(r.Error, "exited with status 4") {
		t.Fatalf("run ended %s after %d restarts: %q", r.Status, r.Restarts, r.Error)
	}
	log := w.eventLog(r)
	if !strings.Contains(log, "turn 1: the agent exited with status 3; stderr:\nfatal: scripted crash (exit 3)") {
		t.Errorf("the crash's stderr was not recorded:\n%s", log)
	}
	turns := w.turns()
	if len(turns) != 2 || turns[1].SessionID != turns[0].SessionID || !slices.Contains(turns[1].Argv, "resume") {
		t.Errorf("turns %+v, want the second to resume the first's conversation", turns)
	}
}

// TestHeadlessIdleTurnIsNudged: a turn that ends without .ace/DONE is idleness: the next turn resumes the same
// conversation with the nudge.
func TestHeadlessIdleTurnIsNudged(t *testing.T) {
	t.Parallel()
	w := newHeadlessWorld(t, "gemini", "say Thinking.\nidle\n"+workScript, nil)
	r := w.run(workflow.UntilSettled)
	if r.Status != store.StatusDone || r.Nudges != 1 {
		t.Fatalf("run ended %s with %d nudges (%s), want done after 1", r.Status, r.Nudges, r.Error)
	}
	turns := w.turns()
	if len(turns) != 2 || !strings.HasPrefix(turns[1].Prompt, w.cfg.Monitor.Nudge) || turns[1].SessionID != r.AgentSessionID ||
		!slices.Contains(turns[1].Argv, "--resume") {
		t.Fatalf("turns %+v, want the task then a nudge resuming %s", turns, r.AgentSessionID)
	}
	inits := 0
	for _, e := range w.transcript(r).Events {
		if e.Kind == headless.KindInit {
			inits++
		}
	}
	if inits != 2 {
		t.Errorf("transcript has %d turns, want both appended to one file", inits)
	}
}

// TestHeadlessQuestionAnswerResumesSession: a question goes to the issue; the human's answer is the next turn of
// the same conversation.
func TestHeadlessQuestionAnswerResumesSession(t *testing.T) {
	t.Parallel()
	script := `question Should the greeting be formal or casual?
write GREETING.md Good day.\n
sh git add GREETING.md && git commit -q -m "Add formal GREETING.md"
done Added a formal greeting as asked.
`
	w := newHeadlessWorld(t, "claude", script, nil)
	r := w.run(workflow.UntilSettled)
	if r.Status != store.StatusWaitingInput {
		t.Fatalf("run ended %s at %s (%s), want waiting_input", r.Status, r.Step, r.Error)
	}
	first := r.AgentSessionID
	answer := "Formal, please: \"Good day.\" — and keep it $(short)."
	w.gh.AddComment(testRepo, testIssue, "alice", answer)
	r = w.run(untilEnded)
	if r.Status != store.StatusDone {
		t.Fatalf("after the answer the run ended %s at %s: %s", r.Status, r.Step, r.Error)
	}
	turns := w.turns()
	if len(turns) != 2 || turns[1].Prompt != answer {
		t.Fatalf("turns %+v, want the answer byte-exact as the second", turns)
	}
	if first == "" || r.AgentSessionID != first || turns[1].SessionID != first || !slices.Contains(turns[1].Argv, first) {
		t.Fatalf("session %q then %q, second argv %q: the answer did not resume the conversation", first, r.AgentSessionID, turns[1].Argv)
	}
}

// TestHeadlessRestartReattaches: ace goes away mid-turn; a new engine over the same root finds the supervisor
// still running, waits for the turn and finishes the run, without starting the agent again.
func TestHeadlessRestartReattaches(t *testing.T) {
	t.Parallel()
	gate := filepath.Join(t.TempDir(), "go")
	script := "say Working on it.\nsh while [ ! -e " + gate + " ]; do sleep 0.05; done\n" + workScript
	w := newHeadlessWorld(t, "codex", script, nil)
	r := w.run(workflow.UntilMonitoring)
	proc := headless.ParseProc(r.State.ExecProc)
	if r.Step != "monitor" || !proc.Alive() {
		t.Fatalf("run at %s, supervisor %v alive=%v", r.Step, proc, proc.Alive())
	}
	if err := w.svc.Close(); err != nil {
		t.Fatal(err)
	}
	w.open() // a new ace process, as far as the engine can tell: new store handle, tracker, engine
	if !proc.Alive() {
		t.Fatal("the supervisor did not survive its ace")
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r = w.run(workflow.UntilSettled)
	if r.Status != store.StatusDone {
		t.Fatalf("run ended %s at %s: %s\n%s", r.Status, r.Step, r.Error, w.eventLog(r))
	}
	if n := len(w.turns()); n != 1 {
		t.Errorf("the agent was started %d times, want once", n)
	}
	if len(w.gh.PRs(testRepo)) != 1 {
		t.Errorf("%d pull requests, want 1", len(w.gh.PRs(testRepo)))
	}
}

func assistantTexts(tr *headless.Transcript) []string {
	var out []string
	for _, e := range tr.Events {
		if e.Kind == headless.KindAssistant {
			out = append(out, e.Text)
		}
	}
	return out
}

// TestHeadlessSecretsRedacted: an agent that prints its secret (in a tool result and on stderr) does not get it
// into the transcript, the debug log, the run's events or the issue.
func TestHeadlessSecretsRedacted(t *testing.T) {
	t.Parallel()
	script := "sh echo key=$FAKE_AGENT_KEY\nwarn key=$FAKE_AGENT_KEY\ncrash 2\n"
	w := newHeadlessWorld(t, "gemini", script, func(c *config.Config) { c.Monitor.MaxRestarts = 0 })
	r := w.run(workflow.UntilSettled)
	if r.Status != store.StatusFailed {
		t.Fatalf("run ended %s: %s", r.Status, r.Error)
	}
	var out string
	for _, e := range w.transcript(r).Events {
		if e.Kind == headless.KindToolResult {
			out = e.Output
		}
	}
	if strings.TrimSpace(out) != "key=[redacted]" {
		t.Errorf("tool output %q, want the secret redacted", out)
	}
	if log := w.eventLog(r); !strings.Contains(log, "stderr:\nkey=[redacted]") {
		t.Errorf("stderr not recorded, or not redacted:\n%s", log)
	}
	for _, c := range w.gh.Comments(testRepo, testIssue) {
		if strings.Contains(c.Body, fakeSecret) {
			t.Errorf("secret in an issue comment: %q", c.Body)
		}
	}
	assertNoSecretOnDisk(t, w, r)
}

// TestHeadlessMissingCLIFailsWithInstallCommand: a headless agent whose CLI is not installed fails at once with
// the command that installs it.
func TestHeadlessMissingCLIFailsWithInstallCommand(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("claude"); err == nil {
		t.Skip("claude is installed here")
	}
	w := newHeadlessWorld(t, "claude", "done nothing\n", func(c *config.Config) {
		a := c.Agents["fake"]
		a.Headless = "claude -p --output-format stream-json --verbose"
		c.Agents["fake"] = a
	})
	r := w.run(workflow.UntilSettled)
	if r.Status != store.StatusFailed || !strings.Contains(r.Error, "claude not found; install it with: npm install -g @anthropic-ai/claude-code") {
		t.Fatalf("run ended %s: %q", r.Status, r.Error)
	}
}

// TestHeadlessClosedIssueStopsAgent: cancelling a headless run ends its supervisor and agent.
func TestHeadlessClosedIssueStopsAgent(t *testing.T) {
	t.Parallel()
	w := newHeadlessWorld(t, "claude", "say Working.\nhang\n", nil)
	r := w.run(workflow.UntilMonitoring)
	st := w.waitAgent(r)
	w.gh.Close(testRepo, testIssue)
	r = w.run(workflow.UntilSettled)
	if r.Status != store.StatusCancelled {
		t.Fatalf("run ended %s (%s), want cancelled", r.Status, r.Error)
	}
	if headless.ParseProc(r.State.ExecProc).Alive() || (headless.Proc{PID: st.AgentPID, Start: st.AgentStart}).Alive() {
		t.Error("the supervisor or the agent outlived the cancelled run")
	}
}

// TestHeadlessLostSupervisor: a supervisor killed with SIGKILL leaves its agent running and no end status; the
// monitor ends that agent by PID and resumes the conversation, spending no restart: the host took it.
func TestHeadlessLostSupervisor(t *testing.T) {
	t.Parallel()
	gate := filepath.Join(t.TempDir(), "never")
	script := "say Working.\nsh while [ ! -e " + gate + " ]; do sleep 0.05; done\n" + workScript
	w := newHeadlessWorld(t, "codex", script, func(c *config.Config) { c.Monitor.MaxRestarts = 1 })
	r := w.run(workflow.UntilMonitoring)
	st := w.waitAgent(r)
	if err := headless.ParseProc(r.State.ExecProc).Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	r = w.run(workflow.UntilSettled)
	if r.Status != store.StatusDone || r.Restarts != 0 {
		t.Fatalf("run ended %s after %d counted restarts: %s\n%s", r.Status, r.Restarts, r.Error, w.eventLog(r))
	}
	if (headless.Proc{PID: st.AgentPID, Start: st.AgentStart}).Alive() {
		t.Error("the orphaned agent was not ended")
	}
	if log := w.eventLog(r); !strings.Contains(log, "turn 1: the headless supervisor disappeared before the turn ended") {
		t.Errorf("the lost supervisor was not recorded:\n%s", log)
	}
	turns := w.turns()
	if len(turns) != 2 || turns[1].SessionID != turns[0].SessionID {
		t.Errorf("turns %+v, want the second to resume the first's conversation", turns)
	}
}

// TestHeadlessKilledAceResumes SIGKILLs `ace run` (a real process) as soon as it reaches start_session or monitor
// and runs it again: the supervisor survives its ace, the second ace adopts it (even one whose PID the first never
// saved) and the agent is started exactly once.
func TestHeadlessKilledAceResumes(t *testing.T) {
	t.Parallel()
	order := map[string]int{"claim": 0, "prepare_workspace": 1, "write_task": 2, "start_session": 3, "monitor": 4,
		"finalize": 5, "report": 6, "done": 7}
	for _, killAt := range []string{"start_session", "monitor"} {
		t.Run(killAt, func(t *testing.T) {
			gate := filepath.Join(t.TempDir(), "go")
			w := newHeadlessWorld(t, "claude", "sh while [ ! -e "+gate+" ]; do sleep 0.05; done\n"+workScript, nil)
			ctx := context.Background()
			cmd := w.aceCmd("run", "--issue", "193")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var r *store.Run
			deadline := time.Now().Add(60 * time.Second)
			for time.Now().Before(deadline) {
				var err error
				if r, err = w.svc.Store.LatestRun(ctx, testRepo, testIssue); err == nil && order[r.Step] >= order[killAt] {
					break
				}
				r = nil
				time.Sleep(2 * time.Millisecond)
			}
			_ = cmd.Process.Signal(syscall.SIGKILL)
			_ = cmd.Wait()
			if r == nil {
				t.Fatalf("never reached %s", killAt)
			}
			if killAt == "monitor" {
				st := w.waitAgent(r)
				if !(headless.Proc{PID: st.SupervisorPID, Start: st.SupervisorStart}).Alive() {
					t.Fatal("the supervisor died with its ace")
				}
			}
			if err := os.WriteFile(gate, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := w.aceCmd("run", "--issue", "193").CombinedOutput()
			if err != nil {
				t.Fatalf("second ace run: %v\n%s", err, out)
			}
			r, err = w.svc.Store.LatestRun(ctx, testRepo, testIssue)
			if err != nil || r.Status != store.StatusDone {
				t.Fatalf("run %+v %v\n%s", r, err, out)
			}
			if n := len(w.turns()); n != 1 {
				t.Errorf("the agent was started %d times, want once", n)
			}
			if n := len(w.gh.PRs(testRepo)); n != 1 {
				t.Errorf("%d pull requests, want 1", n)
			}
		})
	}
}

// TestHeadlessAdoptsUnrecordedSupervisor: ace died after starting a supervisor and before saving anything about
// it (the run still says start_session, no PID, no turn). The turn lock finds it: adopted, not started twice.
func TestHeadlessAdoptsUnrecordedSupervisor(t *testing.T) {
	t.Parallel()
	gate := filepath.Join(t.TempDir(), "go")
	w := newHeadlessWorld(t, "gemini", "sh while [ ! -e "+gate+" ]; do sleep 0.05; done\n"+workScript, nil)
	r := w.run(workflow.UntilMonitoring)
	w.waitAgent(r)
	w.stopQueue() // ace dies here
	r = w.latest(testIssue)
	r.State.ExecProc, r.State.ExecTurn, r.State.ExecFormat, r.State.PromptDelivered = "", 0, "", false
	r.Step = "start_session"
	if err := w.svc.Store.UpdateRun(context.Background(), r, nil); err != nil {
		t.Fatal(err)
	}
	w.open()
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r = w.run(workflow.UntilSettled)
	if r.Status != store.StatusDone {
		t.Fatalf("run ended %s at %s: %s\n%s", r.Status, r.Step, r.Error, w.eventLog(r))
	}
	if n := len(w.turns()); n != 1 {
		t.Errorf("the agent was started %d times, want once", n)
	}
	if log := w.eventLog(r); !strings.Contains(log, "re-attached to headless fake, turn 1") {
		t.Errorf("no re-attach event:\n%s", log)
	}
}

// TestHeadlessNudgeByHandIsNextTurn: `ace nudge` on a headless run queues the nudge; it becomes the next turn of
// the conversation as soon as the current one ends, before idleness is considered.
func TestHeadlessNudgeByHandIsNextTurn(t *testing.T) {
	t.Parallel()
	gate := filepath.Join(t.TempDir(), "go")
	w := newHeadlessWorld(t, "codex", "sh while [ ! -e "+gate+" ]; do sleep 0.05; done\nidle\n"+workScript, nil)
	r := w.run(workflow.UntilMonitoring)
	w.waitAgent(r)
	if err := w.svc.Engine.Nudge(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r = w.run(workflow.UntilSettled)
	if r.Status != store.StatusDone || r.Nudges != 0 {
		t.Fatalf("run ended %s with %d automatic nudges: %s", r.Status, r.Nudges, r.Error)
	}
	turns := w.turns()
	if len(turns) != 2 || !strings.HasPrefix(turns[1].Prompt, w.cfg.Monitor.Nudge) || turns[1].SessionID != turns[0].SessionID {
		t.Fatalf("turns %+v, want the hand nudge as the second turn of the same conversation", turns)
	}
}

// TestHeadlessSendAnswersFromAnotherProcess: `ace send` (a real process) answers a headless question; the answer
// is the next turn of the conversation.
func TestHeadlessSendAnswersFromAnotherProcess(t *testing.T) {
	t.Parallel()
	script := "question Which greeting?\nwrite GREETING.md Hi.\\n\nsh git add GREETING.md && git commit -q -m greet\ndone Greeted.\n"
	w := newHeadlessWorld(t, "codex", script, nil)
	r := w.run(workflow.UntilSettled)
	if r.Status != store.StatusWaitingInput {
		t.Fatalf("run ended %s (%s), want waiting_input", r.Status, r.Error)
	}
	out, err := w.aceCmd("send", "193", "Say hi.").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "sent to headless conversation "+r.AgentSessionID) {
		t.Fatalf("ace send: %v\n%s", err, out)
	}
	r = w.run(workflow.UntilSettled)
	if r.Status != store.StatusDone {
		t.Fatalf("run ended %s: %s\n%s", r.Status, r.Error, w.eventLog(r))
	}
	if turns := w.turns(); len(turns) != 2 || turns[1].Prompt != "Say hi." || turns[1].SessionID != turns[0].SessionID {
		t.Fatalf("turns %+v", turns)
	}
}

// TestHeadlessCompactionBetweenTurns: once the JSONL transcript has grown past compact_threshold, the idle
// moment after a turn is used for a turn with the agent's compact command, in the same conversation; then the
// agent is nudged as after any idle turn (counted, so compacting can never loop past max_nudges).
func TestHeadlessCompactionBetweenTurns(t *testing.T) {
	t.Parallel()
	script := "say " + strings.Repeat("Reading the code base. ", 20) + "\nidle\nsay Compacted.\nidle\n" + workScript
	w := newHeadlessWorld(t, "claude", script, func(c *config.Config) { c.Monitor.CompactThreshold = 512 })
	r := w.run(workflow.UntilSettled)
	if r.Status != store.StatusDone || r.Nudges != 1 {
		t.Fatalf("run ended %s with %d nudges (%s), want done after one", r.Status, r.Nudges, r.Error)
	}
	turns := w.turns()
	if len(turns) != 3 || turns[1].Prompt != "/compact" || !strings.HasPrefix(turns[2].Prompt, w.cfg.Monitor.Nudge) {
		t.Fatalf("turns %+v, want the task, /compact, then a nudge", turns)
	}
	for _, tr := range turns[1:] {
		if tr.SessionID != r.AgentSessionID {
			t.Fatalf("turn %+v left the conversation %s", tr, r.AgentSessionID)
		}
	}
	evs, err := w.svc.Store.Events(context.Background(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range evs {
		if e.Kind == "compact" {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("%d compact events, want the request and its end", n)
	}
}

// TestHeadlessCompactionCannotLoop: an agent whose every turn outgrows compact_threshold and ends without
// finishing alternates compacting and nudges only until max_nudges; then a human is asked.
func TestHeadlessCompactionCannotLoop(t *testing.T) {
	t.Parallel()
	var script strings.Builder
	for range 20 {
		script.WriteString("say " + strings.Repeat("Still reading. ", 40) + "\nidle\n")
	}
	w := newHeadlessWorld(t, "claude", script.String(), func(c *config.Config) {
		c.Monitor.CompactThreshold = 256
		c.Monitor.MaxNudges = 2
	})
	r := w.run(workflow.UntilSettled)
	if r.Status != store.StatusWaitingInput || r.Nudges != 2 {
		t.Fatalf("run ended %s at %s with %d nudges (%s), want waiting for a human after 2", r.Status, r.Step, r.Nudges, r.Error)
	}
	if n := len(w.turns()); n > 6 {
		t.Fatalf("%d turns for 2 nudges: compaction looped", n)
	}
}
