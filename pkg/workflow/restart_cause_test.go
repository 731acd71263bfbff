package workflow

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/headless"
	"github.com/aceworks/ace/pkg/livehost"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tmuxops"
)

// TestExitCauses: what each runner's evidence says about who ended an agent. Only the agent's own ends may spend
// monitor.max_restarts; a session or server gone, a supervisor gone or stopped, a host stopped by a signal are
// the host's.
func TestExitCauses(t *testing.T) {
	gone := func() string { return "its tmux server is gone" }
	dead := func(code int) tmuxops.Pane { return tmuxops.Pane{Dead: true, ExitStatus: code} }
	running := &headless.Status{Turn: 2, SupervisorPID: 4242, Outcome: headless.OutcomeRunning}
	ended := func(outcome string, code int) *headless.Status {
		return &headless.Status{Turn: 2, Outcome: outcome, ExitCode: code, Done: true}
	}
	for _, tc := range []struct {
		name string
		c    exitCause
		host bool
	}{
		{"tmux: the agent's own exit status", paneCause("the agent", dead(3), true, gone), false},
		{"tmux: killed -9 (an OOM, the agent's own child)", paneCause("the agent", dead(137), true, gone), false},
		{"tmux: status not reaped", paneCause("the agent", dead(tmuxops.ExitUnknown), true, gone), false},
		{"tmux: SIGTERM from outside", paneCause("the agent", dead(143), true, gone), true},
		{"tmux: SIGHUP (its terminal gone)", paneCause("the agent", dead(129), true, gone), true},
		{"tmux: session gone (kill-server, a crash, a reboot)", paneCause("the agent", tmuxops.Pane{}, false, gone), true},
		{"exec: the CLI's exit code", turnCause("exited 3", ended(headless.OutcomeExited, 3), false), false},
		{"exec: killed for silence", turnCause("idle", ended(headless.OutcomeIdleTimeout, 137), false), false},
		{"exec: killed for its length", turnCause("turn", ended(headless.OutcomeTurnTimeout, 137), false), false},
		{"exec: could not start", turnCause("start", ended(headless.OutcomeStartFailed, 127), false), false},
		{"exec: no status at all", turnCause("gone", nil, false), false},
		{"exec: supervisor gone mid-turn", turnCause("gone", running, false), true},
		{"exec: supervisor gone with a reboot", turnCause("gone", running, true), true},
		{"exec: supervisor stopped", turnCause("stopped", ended(headless.OutcomeStopped, 143), false), true},
		{"exec: the CLI ended by SIGTERM", turnCause("exited 143", ended(headless.OutcomeExited, 143), false), true},
		{"live: the CLI exited by itself (host exits 1)", liveCause(dead(1), true, gone), false},
		{"live: bad spec (host exits 2)", liveCause(dead(livehost.ExitUsage), true, gone), false},
		{"live: host stopped by a signal (exits 0)", liveCause(dead(0), true, gone), true},
		{"live: host killed by SIGTERM before it could exit 0", liveCause(dead(143), true, gone), true},
		{"live: session gone with the tmux server", liveCause(tmuxops.Pane{}, false, gone), true},
		{"live: host alive, its socket not answering", liveCause(tmuxops.Pane{}, true, gone), false},
	} {
		if tc.c.host != tc.host {
			t.Errorf("%s: host = %v, want %v (%+v)", tc.name, tc.c.host, tc.host, tc.c)
		}
		if tc.c.host && tc.c.why == "" {
			t.Errorf("%s: a host cause without evidence", tc.name)
		}
	}
	if c := turnCause("gone", running, true); c.why != "the host restarted: its boot id changed" {
		t.Errorf("a reboot's evidence: %q", c.why)
	}
}

// TestHostRestartsDoNotSpendMaxRestarts: a run whose agent the host took any number of times may restart it each
// time, and its count stays; the agent's own ends spend monitor.max_restarts and then stop it. Each restart's
// event says its cause, its evidence and whether it was counted.
func TestHostRestartsDoNotSpendMaxRestarts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "ace.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r := &store.Run{Repo: "acme/widgets", Issue: 1, Attempt: 1, Agent: "fake", Step: "monitor", Status: store.StatusActive}
	if err := st.CreateRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Monitor.MaxRestarts = 1
	e := withParts(&Engine{cfg: cfg, log: slog.New(slog.DiscardHandler), o: Options{Config: cfg, Store: st}})

	host := hostCause("the agent's session disappeared", "its tmux server is gone")
	for range 5 {
		if !e.mayRestart(r, host) {
			t.Fatalf("a host-caused end after %d restarts may not restart", r.Restarts)
		}
		e.restarted(ctx, r, host, "restarting it")
	}
	if r.Restarts != 0 {
		t.Errorf("restarts = %d after 5 host-caused ends, want 0", r.Restarts)
	}
	own := agentCause("the agent exited with status 3")
	if !e.mayRestart(r, own) {
		t.Fatal("the agent's first own end may not restart")
	}
	e.restarted(ctx, r, own, "restarting it")
	if r.Restarts != 1 || e.mayRestart(r, own) {
		t.Errorf("after its own end: restarts = %d, may restart again = %v; want 1, false", r.Restarts, e.mayRestart(r, own))
	}
	if !e.mayRestart(r, host) {
		t.Error("a host-caused end once max_restarts is spent may not restart")
	}

	evs, err := st.Events(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	var counted, free int
	for _, ev := range evs {
		var d restartData
		if ev.Kind != string(EventAgentExited) || json.Unmarshal([]byte(ev.Data), &d) != nil {
			continue
		}
		switch {
		case d.Cause == "host" && !d.Counted && d.Evidence == "its tmux server is gone":
			free++
		case d.Cause == "agent" && d.Counted && d.Restarts == 1:
			counted++
		default:
			t.Errorf("restart event %q: data %+v", ev.Message, d)
		}
	}
	if free != 5 || counted != 1 {
		t.Errorf("%d uncounted host restarts and %d counted ones recorded, want 5 and 1", free, counted)
	}
}
