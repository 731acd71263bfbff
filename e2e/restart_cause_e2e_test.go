package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/testkit"
	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/headless"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// hostKills is how often the host takes the agent in these cases: several times monitor.max_restarts (1).
const hostKills = 3

// TestHostKillsDoNotSpendMaxRestarts: an agent the host takes — its tmux server killed (`tmux kill-server`), its
// headless supervisor killed -9 — three times with monitor.max_restarts = 1 is started again each time and its run
// reaches its pull request with no restart spent; an agent that then crashes by itself is still stopped after one
// restart. The agent's first starts announce themselves in a file and wait until they are taken.
func TestHostKillsDoNotSpendMaxRestarts(t *testing.T) {
	t.Parallel()
	for _, runner := range []string{"tmux", "exec"} {
		for _, then := range []string{"works", "crashes"} {
			t.Run(runner+"/"+then, func(t *testing.T) {
				t.Parallel()
				hostKillsCase(t, runner, then)
			})
		}
	}
}

// TestLiveHostKillsDoNotSpendMaxRestarts is TestHostKillsDoNotSpendMaxRestarts for the live runner: its host goes
// with the tmux server. The `claude` it starts is this test's own (the fake speaking its protocol). Not parallel
// (yet): beside other parallel tests under load a take sometimes finds no tmux server left ("no server running":
// its socket file is there, nobody listens), the agent — in a process group of its own — still running its script,
// the run at monitor with no event of ace's ending the session. Seen 1 in 8 runs beside the other host-kill cases
// and the crash soak (-parallel 16, 2 busy loops), at the first take and after a restart; 0 in 10 with -count=5
// beside 2 busy loops alone. Not a segfault of tmux (none logged then), not tmuxops.Kill signalling a dead pane's
// reused PID (fixed; seen again after). Open.
func TestLiveHostKillsDoNotSpendMaxRestarts(t *testing.T) {
	for _, then := range []string{"works", "crashes"} {
		t.Run(then, func(t *testing.T) { hostKillsCase(t, "live", then) })
	}
}

// hostKillsCase is one case of the host-kill tests: runner's agent taken hostKills times, then working to the pull
// request or crashing by itself.
func hostKillsCase(t *testing.T, runner, then string) {
	dir := t.TempDir()
	script := blockingStarts(dir, hostKills) + workScript
	if then == "crashes" {
		script = blockingStarts(dir, hostKills) + "crash 3\ncrash 3\n" // a headless or live conversation goes on
	}
	tune := func(c *config.Config) { c.Monitor.MaxRestarts = 1 }
	var w *world
	switch runner {
	case "exec":
		w = newHeadlessWorld(t, "claude", script, tune)
	case "live":
		claude := filepath.Join(t.TempDir(), "claude")
		w = newWorld(t, script, func(c *config.Config) {
			tune(c)
			fake := c.Agents["fake"]
			// The live runner starts claude, this test's (as a release installed apart).
			c.Agents["claude"] = config.AgentConfig{Override: agents.Override{Command: fake.Command, Env: fake.Env, Runner: "live", Program: claude}}
			c.Agent.Default = "claude"
		})
		// Its place in the script is kept in the working copy (git-excluded .ace/): a resumed conversation goes on.
		shim := fmt.Sprintf("#!/bin/sh\nexec %s demo-agent live --script %s --record %s --state .ace/fake.state \"$@\"\n",
			w.bin, w.script, w.record)
		if err := os.WriteFile(claude, []byte(shim), 0o755); err != nil {
			t.Fatal(err)
		}
	default:
		w = newWorld(t, script, tune)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range w.progress() {
				t.Logf("%s %s: %s", p.Step, p.Kind, p.Message)
			}
		}
	})
	ran := w.runAsync()
	for k := range hostKills {
		testkit.WaitFor(t, fmt.Sprintf("start %d of the agent", k+1), 60*time.Second, func() bool {
			_, err := os.Stat(filepath.Join(dir, fmt.Sprint("started-", k)))
			return err == nil
		})
		if err := os.WriteFile(filepath.Join(dir, "kills"), []byte(fmt.Sprint(k+1)), 0o644); err != nil {
			t.Fatal(err)
		}
		w.takeAgent(runner)
	}
	r := <-ran
	if r == nil {
		t.FailNow() // runAsync said why
	}
	host, own := w.restartCauses(r)
	if host != hostKills {
		t.Errorf("%d restarts recorded as the host's, want %d:\n%s", host, hostKills, w.eventLog(r))
	}
	switch then {
	case "works":
		if r.Status != store.StatusDone || r.Restarts != 0 || own != 0 {
			t.Fatalf("run ended %s after %d counted restarts (%s), want done with none:\n%s",
				r.Status, r.Restarts, r.Error, w.eventLog(r))
		}
		if n := len(w.gh.PRs(testRepo)); n != 1 {
			t.Errorf("%d pull requests, want 1", n)
		}
	case "crashes":
		if r.Status != store.StatusFailed || r.Restarts != 1 || own != 1 {
			t.Fatalf("run ended %s after %d counted restarts (%s), want failed after 1:\n%s",
				r.Status, r.Restarts, r.Error, w.eventLog(r))
		}
	}
}

// blockingStarts are a script's first actions: while the test has taken the agent fewer than n times (the count
// it writes to dir/kills before each take), a start touches dir/started-K, K that count, and waits until the agent
// is gone (its parent, the fake agent, no longer there); once it has taken it n times they go on at once. The
// count is the test's, not the script's: where a resumed conversation goes on (the action after the one its
// process was killed in, as the fake agent saved it — late, under load) or a new process starts the script
// afresh, whichever block comes next waits for the right take. There are 2n of them, so that one is left however
// far a resume went. The files live outside the working copy: nothing there looks like work.
func blockingStarts(dir string, n int) string {
	kills := filepath.Join(dir, "kills")
	block := fmt.Sprintf("sh k=$(cat %[1]s 2>/dev/null || echo 0); "+
		"if [ $k -lt %[2]d ]; then touch %[3]s/started-$k; while kill -0 $PPID 2>/dev/null; do sleep 0.05; done; fi\n",
		kills, n, dir)
	return strings.Repeat(block, 2*n)
}

// takeAgent ends the agent of the world's run as the host would: `tmux kill-server` for a tmux agent or a live
// host, SIGKILL to its supervisor for a headless one.
func (w *world) takeAgent(runner string) {
	w.t.Helper()
	if runner != "exec" {
		if out, err := exec.Command("tmux", "-L", w.cfg.Tmux.Socket, "kill-server").CombinedOutput(); err != nil {
			w.t.Fatalf("tmux kill-server: %v: %s", err, out)
		}
		return
	}
	// The supervisor saves its status once it has started the agent, which may have reached the script's block
	// (and told the test) before that: wait for the status that names the agent.
	var st *headless.Status
	testkit.WaitFor(w.t, "the running turn's status naming its agent", 30*time.Second, func() bool {
		files, _ := filepath.Glob(filepath.Join(w.cfg.Workspace.Root, "run", "headless", "*.status.json"))
		if len(files) > 1 {
			w.t.Fatalf("%d headless status files, want 1", len(files))
		}
		if len(files) == 0 {
			return false
		}
		s, err := headless.ReadStatus(files[0])
		if err != nil || s.AgentPID == 0 {
			return false
		}
		st = s
		return true
	})
	if st.Done {
		w.t.Fatalf("the running turn's status: %+v: done", st)
	}
	if err := (headless.Proc{PID: st.SupervisorPID, Start: st.SupervisorStart}).Signal(syscall.SIGKILL); err != nil {
		w.t.Fatalf("kill the supervisor: %v", err)
	}
}

// runAsync drives issue 193 until it has ended, in the background; the channel gives the run, or nil after
// reporting why it could not. A test that stops early (t.Fatal) ends the drive at cleanup, before its store is
// closed, and waits for it: a drive left going met the closed store and failed the test after it had completed,
// which panics and ends every test of the package.
func (w *world) runAsync() <-chan *store.Run {
	out := make(chan *store.Run, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	done := make(chan struct{})
	w.t.Cleanup(func() {
		cancel()
		<-done
	})
	go func() {
		defer close(done)
		defer cancel()
		r, err := w.svc.Engine.Open(ctx, workflow.Request{Repo: testRepo, Issue: testIssue, NewAttempt: true})
		if err == nil {
			if err = w.svc.Engine.Follow(ctx, r, untilEnded); err != nil {
				err = fmt.Errorf("%w (run at %s, %s)", err, r.Step, r.Error)
			}
		}
		if err != nil {
			w.t.Errorf("drive: %v", err)
			r = nil
		}
		out <- r
	}()
	return out
}

// restartCauses counts the run's restarts by their recorded cause: the host's and the agent's own.
func (w *world) restartCauses(r *store.Run) (host, own int) {
	w.t.Helper()
	evs, err := w.svc.Store.Events(context.Background(), r.ID)
	if err != nil {
		w.t.Fatal(err)
	}
	for _, ev := range evs {
		var d struct {
			Cause   string `json:"cause"`
			Counted bool   `json:"counted"`
		}
		if ev.Kind != string(workflow.EventAgentExited) || !strings.HasPrefix(ev.Data, "{") ||
			json.Unmarshal([]byte(ev.Data), &d) != nil {
			continue
		}
		switch {
		case d.Cause == "host" && !d.Counted:
			host++
		case d.Cause == "agent" && d.Counted:
			own++
		}
	}
	return host, own
}
