package e2e_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// TestLiveFallsBackToTmux: an agent set to runner "live" whose CLI does not speak its live protocol (a `claude`
// that prints a line and exits: an old release, a wrapper) goes on in the tmux runner, in the same working copy,
// with a warning on the run, and opens its pull request. The tmux side is the fake agent, which draws claude's
// markers.
func TestLiveFallsBackToTmux(t *testing.T) {
	t.Parallel()
	claude := filepath.Join(t.TempDir(), "claude")
	script := "#!/bin/sh\necho 'claude: this build has no stream-json mode' >&2\nexit 1\n"
	if err := os.WriteFile(claude, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, workScript, func(c *config.Config) {
		fake := c.Agents["fake"]
		// The live runner starts this test's claude (as a release installed apart), the tmux runner the fake.
		c.Agents["claude"] = config.AgentConfig{
			Override: agents.Override{Command: fake.Command, Env: fake.Env, Runner: "live", Program: claude}}
		c.Agent.Default = "claude"
	})
	r := w.run(workflow.UntilSettled)
	if r.Status != store.StatusDone {
		t.Fatalf("run %s at %s: %s", r.Status, r.Step, r.Error)
	}
	if r.Runner != "tmux" {
		t.Errorf("the run ended on runner %q, want tmux after the fallback", r.Runner)
	}
	evs, err := w.svc.Store.Events(context.Background(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	fellBack := false
	for _, ev := range evs {
		fellBack = fellBack || ev.Kind == string(workflow.EventLiveFallback) && strings.Contains(ev.Message, "handshake")
	}
	if !fellBack {
		t.Errorf("no live-fallback event says the handshake failed")
	}
	if len(w.gh.PRs(testRepo)) != 1 {
		t.Errorf("%d pull requests, want 1", len(w.gh.PRs(testRepo)))
	}
}
