package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/fakegithub"
	"github.com/aceworks/ace/internal/testkit"
	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/procs"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// Fallback (agent.fallback): the first agent (the fake agent) does part of the work, commits it and hits its
// account's usage limit with a reset hours away; a second fake-agent profile, "fake2", takes the run over in the
// same working copy and finishes it.

// firstAgentScript outlines the work, commits it, notes its PID in dir and hits a limit resetting at reset.
func firstAgentScript(dir string, reset time.Time) string {
	return fmt.Sprintf(`sh echo $PPID > %s
write NOTES.md Outline by the first agent: GREETING.md says hello.\n
sh git add NOTES.md && git commit -q -m "Outline the greeting"
say Usage limit reached · resets at %s
idle
`, filepath.Join(dir, "agent1.pid"), reset.UTC().Format(time.RFC3339))
}

// secondAgentScript keeps the handover it was given (in dir), then does the rest of the work and finishes.
func secondAgentScript(dir string) string {
	return fmt.Sprintf(`sh cp .ace/HANDOVER.md %s
busy 300ms
write GREETING.md Hello from the second agent!\n
sh git add GREETING.md && git commit -q -m "Add GREETING.md"
done Added GREETING.md after the first agent's outline.
`, filepath.Join(dir, "handover-seen.md"))
}

// withAgents runs the fake agent with runner first and adds the agent "fake2" (the fake agent under another
// name: a custom agent with the fake agent's markers) running secondAgentScript from dir with runner second, as
// the fallback.
func withAgents(t *testing.T, dir, first, second string) func(*config.Config) {
	return func(c *config.Config) {
		limitTune(c)
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		script := filepath.Join(dir, "agent2-script.txt")
		if err := os.WriteFile(script, []byte(secondAgentScript(dir)), 0o644); err != nil {
			t.Fatal(err)
		}
		a := config.AgentConfig{Override: agents.Override{
			Command: fmt.Sprintf("%s demo-agent --script %s --record %s", exe, script, filepath.Join(dir, "prompts2.jsonl")),
			Env:     c.Agents["fake"].Env,
			Markers: agents.MarkerOverride{Ready: `\? for shortcuts`, Busy: `esc to interrupt`,
				Approval: `Do you want to proceed\?`, Question: `Enter to select`}}}
		c.Agents["fake2"] = headlessIf(a, second == "exec")
		c.Agents["fake"] = headlessIf(c.Agents["fake"], first == "exec")
		c.Monitor.ExecIdleTimeout = c.Monitor.StuckAfter // the least ace's processes take (config validation)
		c.Monitor.ExecTurnTimeout = config.Duration{Duration: 60 * time.Second}
		c.Agent.Fallback = []string{"fake", "fake2"} // fake has the run already: passed over
		c.Agent.FallbackAfter = config.Duration{Duration: 10 * time.Minute}
	}
}

// headlessIf is agent a behind the headless runner (the fake agent printing claude's stream) when exec is set.
func headlessIf(a config.AgentConfig, exec bool) config.AgentConfig {
	if exec {
		base := strings.Replace(a.Command, " demo-agent ", " demo-agent headless --format claude ", 1)
		a.Runner, a.HeadlessFormat, a.Headless, a.HeadlessResume = "exec", "claude", base, base+" --resume {session_id}"
	}
	return a
}

func TestFallbackHandsTheRunToTheNextAgent(t *testing.T) {
	t.Parallel()
	for _, runners := range [][2]string{{"tmux", "tmux"}, {"tmux", "exec"}, {"exec", "tmux"}, {"exec", "exec"}} {
		first, runner := runners[0], runners[1]
		t.Run(first+"-to-"+runner, func(t *testing.T) {
			t.Parallel()
			reset := time.Now().Add(3 * time.Hour).Truncate(time.Second)
			dir := t.TempDir()
			w := newWorld(t, firstAgentScript(dir, reset), withAgents(t, dir, first, runner))
			t.Cleanup(w.killHeadless)

			r := w.run(func(r *store.Run) bool { return r.Agent == "fake2" || untilPaused(r) })
			if r.Agent != "fake2" || r.Runner != runner || r.Status != store.StatusActive {
				t.Fatalf("run on %s (%s), %s at %s (%s); want it handed to fake2 (%s), active", r.Agent, r.Runner, r.Status, r.Step, r.Error, runner)
			}
			hs := r.State.Fallback.Handovers
			if len(hs) != 1 || hs[0].From != "fake" || hs[0].To != "fake2" || !hs[0].Until.Equal(reset) || hs[0].Shared {
				t.Errorf("handovers %+v, want one from fake to fake2, its limit until %v", hs, reset)
			}
			// The first agent was stopped before its run moved on: its process goes with its session (a signal is
			// delivered, not waited for).
			pid := readPID(t, filepath.Join(dir, "agent1.pid"))
			testkit.WaitFor(t, fmt.Sprintf("the first agent (pid %d) to be gone", pid), 10*time.Second, func() bool { return !procs.Alive(pid) })
			if first == "tmux" && runner == "exec" && w.sessionAlive() {
				t.Errorf("the first agent's tmux session is still there")
			}
			if agent := lsAgent(t, w); agent != "fake2" {
				t.Errorf("ace ls shows agent %q, want fake2", agent)
			}

			follow(t, w, r, workflow.UntilSettled)
			if r.Status != store.StatusDone || r.Agent != "fake2" {
				t.Fatalf("run ended %s on %s at %s: %s", r.Status, r.Agent, r.Step, r.Error)
			}
			if n := len(w.gh.PRs(testRepo)); n != 1 {
				t.Errorf("%d pull requests, want 1", n)
			}
			if first == "exec" { // a headless agent reports its spend: the first one's stays counted
				before := r.State.Fallback.Handovers[0].Usage
				if before.Tokens() == 0 || r.State.Usage.Tokens() < before.Tokens() {
					t.Errorf("usage %+v, %+v at the handover: the first agent's spend was lost", r.State.Usage, before)
				}
			}
			if s := w.statusComments(); len(s) != 1 || !strings.Contains(s[0], "| agent | fake2 |") ||
				!strings.Contains(s[0], "| handed over | fake → fake2 (usage limit until "+reset.UTC().Format(time.RFC3339)+") |") {
				t.Errorf("status comments %q, want one (edited) naming fake2 and the handover from fake", s)
			}
			// Both agents' commits are on the branch the pull request is for.
			log, err := exec.Command("git", "--git-dir", w.remote, "log", "--format=%s", r.Branch).CombinedOutput()
			if err != nil || !strings.Contains(string(log), "Outline the greeting") || !strings.Contains(string(log), "Add GREETING.md") {
				t.Errorf("branch %s: %v\n%s", r.Branch, err, log)
			}

			// The first agent got the task, nothing else; the second one the handover prompt, and read the handover:
			// the first agent's commit and diff, and the end of its transcript.
			if p := w.prompts(); len(p) != 1 || !strings.Contains(p[0], "Read ACE_TASK.md") {
				t.Errorf("first agent's prompts %q, want the task alone", p)
			}
			p2 := promptsIn(t, filepath.Join(dir, "prompts2.jsonl"))
			if len(p2) != 1 || !strings.Contains(p2[0], ".ace/HANDOVER.md") || !strings.Contains(p2[0], "(fake)") ||
				!strings.Contains(p2[0], "usage limit") {
				t.Errorf("second agent's prompts %q, want one pointing at the handover from fake", p2)
			}
			seen, err := os.ReadFile(filepath.Join(dir, "handover-seen.md"))
			if err != nil {
				t.Fatalf("the second agent did not find the handover: %v", err)
			}
			for _, want := range []string{"Outline the greeting", "NOTES.md", "+Outline by the first agent: GREETING.md says hello.",
				"Usage limit reached", reset.UTC().Format(time.RFC3339)} {
				if !strings.Contains(string(seen), want) {
					t.Errorf("the handover lacks %q:\n%s", want, seen)
				}
			}

			var fallbacks []string
			for _, ev := range w.progress() {
				if ev.Kind == workflow.EventFallback {
					fallbacks = append(fallbacks, ev.Message)
				}
				if ev.Kind == workflow.EventQuestion || ev.Kind == workflow.EventNudge {
					t.Errorf("the limit cost a %s: %s", ev.Kind, ev.Message)
				}
			}
			if len(fallbacks) != 1 || !strings.Contains(fallbacks[0], "handed the run to fake2") || !strings.Contains(fallbacks[0], "fake hit a usage limit") {
				t.Errorf("fallback events %q, want one saying fake hit a limit and fake2 took over", fallbacks)
			}
		})
	}
}

// TestFallbackPausesAsBefore: a reset nearer than fallback_after, and fallback agents that are all at a limit
// (or have had the run), leave the run paused on its agent as without fallback. A paused run looks again: once a
// fallback agent is free, it takes the run.
func TestFallbackPausesAsBefore(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		reset time.Duration
		tune  func(*config.Config)
		setup func(t *testing.T, w *world, reset time.Time)
		why   string // in the fallback event; "" for none
	}{
		{name: "reset-near", reset: 5 * time.Minute,
			tune: func(c *config.Config) { c.Agent.FallbackAfter = config.Duration{Duration: time.Hour} }},
		{name: "every-fallback-agent-at-a-limit", reset: 3 * time.Hour,
			tune:  func(c *config.Config) { c.Limits.Backoff = config.Duration{Duration: 300 * time.Millisecond} }, // how often it looks again
			setup: func(t *testing.T, w *world, reset time.Time) { pausedOn(t, w, "fake2", reset.Add(time.Hour)) },
			why:   "fake2 is at a usage limit until"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			reset := time.Now().Add(c.reset).Truncate(time.Second)
			dir := t.TempDir()
			w := newWorld(t, firstAgentScript(dir, reset), func(cfg *config.Config) {
				withAgents(t, dir, "tmux", "tmux")(cfg)
				if c.tune != nil {
					c.tune(cfg)
				}
			})
			if c.setup != nil {
				c.setup(t, w, reset)
			}
			r := w.run(func(r *store.Run) bool { return r.Agent != "fake" || untilPaused(r) })
			if r.Status != store.StatusPausedLimit || r.Agent != "fake" || !r.State.ResumeAt.Equal(reset) {
				t.Fatalf("run %s on %s until %v (%s), want paused_limit on fake until %v", r.Status, r.Agent, r.State.ResumeAt, r.Error, reset)
			}
			if !w.sessionAlive() || r.State.Fallback != nil {
				t.Errorf("session alive %v, fallback %+v: want the agent kept, no handover", w.sessionAlive(), r.State.Fallback)
			}
			var fallbacks []string
			for _, ev := range w.progress() {
				if ev.Kind == workflow.EventFallback {
					fallbacks = append(fallbacks, ev.Message)
				}
			}
			switch {
			case c.why == "" && len(fallbacks) > 0:
				t.Errorf("fallback events %q, want none", fallbacks)
			case c.why != "" && (len(fallbacks) != 1 || !strings.Contains(fallbacks[0], c.why) || !strings.Contains(fallbacks[0], "fake has had the run")):
				t.Errorf("fallback events %q, want one saying %q and that fake has had the run", fallbacks, c.why)
			}
			if p := promptsIn(t, filepath.Join(dir, "prompts2.jsonl")); len(p) != 0 {
				t.Errorf("fake2 was given %q", p)
			}
			if c.setup == nil {
				return
			}
			// fake2's limit ends early: the paused run goes to it and is finished there.
			freeAgent(t, w, 194)
			follow(t, w, r, workflow.UntilSettled)
			if r.Status != store.StatusDone || r.Agent != "fake2" || len(w.gh.PRs(testRepo)) != 1 {
				t.Fatalf("run %s on %s (%s), %d PRs; want done by fake2 with one", r.Status, r.Agent, r.Error, len(w.gh.PRs(testRepo)))
			}
			if hs := r.State.Fallback.Handovers; len(hs) != 1 || hs[0].From != "fake" || !hs[0].Until.Equal(reset) {
				t.Errorf("handovers %+v, want one from fake, its limit until %v", hs, reset)
			}
			// Looking again while paused is quiet: one event for the pause, one for the handover.
			fallbacks = fallbacks[:0]
			for _, ev := range w.progress() {
				if ev.Kind == workflow.EventFallback {
					fallbacks = append(fallbacks, ev.Message)
				}
			}
			if len(fallbacks) != 2 || !strings.Contains(fallbacks[1], "handed the run to fake2") {
				t.Errorf("fallback events %q, want the pause's and the handover's", fallbacks)
			}
			if s := w.statusComments(); len(s) != 1 || !strings.Contains(s[0], "| handed over | fake → fake2") {
				t.Errorf("status comments %q, want one naming the handover", s)
			}
		})
	}
}

// pausedOn records a run of issue 194 that hit agent's usage limit, paused until until: the state a run on a
// custom agent (which has no limit patterns) would be in.
func pausedOn(t *testing.T, w *world, agent string, until time.Time) {
	t.Helper()
	w.gh.AddIssue(testRepo, fakegithub.IssueOptions{Number: 194, Title: "Another", Body: "Something else.", Author: "alice"})
	r := &store.Run{Repo: testRepo, Issue: 194, Attempt: 1, Agent: agent, Runner: "tmux", Step: string(workflow.StepMonitor),
		Status: store.StatusPausedLimit, State: store.RunState{ResumeAt: until.UTC(),
			Limit: &store.LimitState{Message: "Usage limit reached", PausedAt: time.Now()}}}
	if err := w.svc.Store.CreateRun(context.Background(), r); err != nil {
		t.Fatal(err)
	}
}

// freeAgent ends the pause of the run of issue, as if its limit had reset early.
func freeAgent(t *testing.T, w *world, issue int) {
	t.Helper()
	ctx := context.Background()
	o, err := w.svc.Store.LatestRun(ctx, testRepo, issue)
	if err != nil {
		t.Fatal(err)
	}
	o.State.ResumeAt = time.Now().Add(-time.Minute).UTC()
	if err := w.svc.Store.UpdateRun(ctx, o, nil); err != nil {
		t.Fatal(err)
	}
}

func promptsIn(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l == "" {
			continue
		}
		var rec struct {
			Prompt string `json:"prompt"`
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("record %q: %v", l, err)
		}
		out = append(out, rec.Prompt)
	}
	return out
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		t.Fatalf("pid file %s: %q", path, b)
	}
	return pid
}

// lsAgent is the AGENT column of issue 193's row in `ace ls`.
func lsAgent(t *testing.T, w *world) string {
	t.Helper()
	out, err := w.aceCmd("ls").CombinedOutput()
	if err != nil {
		t.Fatalf("ace ls: %v\n%s", err, out)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) > 3 && f[0] == testRepo && f[1] == strconv.Itoa(testIssue) {
			return f[3]
		}
	}
	t.Fatalf("ace ls has no row for %s#%d:\n%s", testRepo, testIssue, out)
	return ""
}
