package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
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
)

// newHeadlessWorld is newWorld with the fake agent behind the headless runner, printing format's stream.
func newHeadlessWorld(t *testing.T, format, script string, tune func(*config.Config)) *world {
	t.Helper()
	w := newWorld(t, script, func(c *config.Config) {
		a := c.Agents["fake"]
		base := strings.Replace(a.Command, " demo-agent ", " demo-agent headless --format "+format+" ", 1)
		resume := " --resume {session_id}"
		if format == "codex" {
			resume = " exec resume {session_id} -" // codex's shape: a subcommand, not a flag
		}
		a.Runner, a.HeadlessFormat = "exec", format
		a.Headless, a.HeadlessResume = base, base+resume
		c.Agents["fake"] = a
		c.Monitor.ExecIdleTimeout = config.Duration{Duration: 30 * time.Second}
		c.Monitor.StuckAfter = c.Monitor.ExecIdleTimeout // exec_idle_timeout may not be below it (ace's own processes check)
		c.Monitor.ExecTurnTimeout = config.Duration{Duration: 60 * time.Second}
		if tune != nil {
			tune(c)
		}
	})
	t.Cleanup(func() { w.killHeadless() })
	return w
}

// killHeadless ends, by PID, every supervisor and agent process group the world's runs started and that are
// still there (a failed test, a run left at waiting_input). The status files name them, with their start times.
func (w *world) killHeadless() {
	files, _ := filepath.Glob(filepath.Join(w.cfg.Workspace.Root, "run", "headless", "*.status.json"))
	for _, f := range files {
		st, err := headless.ReadStatus(f)
		if err != nil {
			continue
		}
		_ = headless.Proc{PID: st.SupervisorPID, Start: st.SupervisorStart}.Signal(syscall.SIGKILL)
		_ = headless.Proc{PID: st.AgentPID, Start: st.AgentStart}.Signal(syscall.SIGKILL)
	}
}

// turnRecord is what the fake headless agent recorded of one invocation.
type turnRecord struct {
	Prompt    string   `json:"prompt"`
	Argv      []string `json:"argv"`
	SessionID string   `json:"session_id"`
}

func (w *world) turns() []turnRecord {
	w.t.Helper()
	b, err := os.ReadFile(w.recordPath())
	if err != nil {
		w.t.Fatal(err)
	}
	var out []turnRecord
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var tr turnRecord
		if err := json.Unmarshal([]byte(l), &tr); err != nil {
			w.t.Fatalf("record %q: %v", l, err)
		}
		out = append(out, tr)
	}
	return out
}

// transcript parses the run's headless transcript.
func (w *world) transcript(r *store.Run) *headless.Transcript {
	w.t.Helper()
	path, format := r.State.Transcript, r.State.ExecFormat
	want := filepath.Join(w.cfg.Workspace.Root, "logs", "fake", r.AgentSessionID+".jsonl")
	if r.AgentSessionID == "" || path != want {
		w.t.Fatalf("transcript path %q (session %q), want %s", path, r.AgentSessionID, want)
	}
	f, err := os.Open(path)
	if err != nil {
		w.t.Fatal(err)
	}
	defer f.Close()
	tr, err := agents.Parsers().ParseAll(format, f)
	if err != nil {
		w.t.Fatal(err)
	}
	return tr
}

// events are the run's events as "kind: message" lines.
func (w *world) eventLog(r *store.Run) string {
	w.t.Helper()
	evs, err := w.svc.Store.Events(context.Background(), r.ID)
	if err != nil {
		w.t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "%s: %s\n", e.Kind, e.Message)
	}
	return b.String()
}

// eventMessages are the messages of the run's events of kind, in order.
func (w *world) eventMessages(r *store.Run, kind string) []string {
	w.t.Helper()
	evs, err := w.svc.Store.Events(context.Background(), r.ID)
	if err != nil {
		w.t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		if e.Kind == kind {
			out = append(out, e.Message)
		}
	}
	return out
}

// waitAgent returns the current turn's status once the agent has said its session id (the deadline only bounds
// a hung test).
func (w *world) waitAgent(r *store.Run) *headless.Status {
	w.t.Helper()
	path := filepath.Join(w.cfg.Workspace.Root, "run", "headless", fmt.Sprintf("ace-widgets-%d-run%d.status.json", r.Issue, r.ID))
	var st *headless.Status
	testkit.WaitFor(w.t, "a running agent in "+path, 30*time.Second, func() bool {
		var err error
		st, err = headless.ReadStatus(path)
		return err == nil && st.SessionID != "" && st.AgentPID != 0
	})
	return st
}
