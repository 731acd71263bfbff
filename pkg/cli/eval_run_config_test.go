package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/eval"
)

// TestEvalRunConfigKeepsRunsApart: ace eval run's engine works in a root, store and tmux socket of its own (of its
// eval directory's: another directory's eval has another), with no
// memory, notification, follow-through, fallback or default agent, and nothing that reaches GitHub; the user's
// configuration is left as it was.
func TestEvalRunConfigKeepsRunsApart(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Workspace.Root, cfg.Store.URL, cfg.Tmux.Socket = "/srv/ace", "postgres://db/ace", "ace"
	cfg.Memory.Enabled, cfg.PR.Follow = true, true
	cfg.Notify = []config.NotifyConfig{{}}
	cfg.Tracker = config.TrackerConfig{Kind: "github"}
	cfg.GitHub.APIURL, cfg.GitHub.TokenEnv = "https://api.github.com", []string{"GITHUB_TOKEN"}
	cfg.Agent.Default, cfg.Agent.Fallback = "claude", []string{"codex"}
	cfg.Agents = map[string]config.AgentConfig{"claude": {Override: agents.Override{GitHubMCP: "https://api.githubcopilot.com/mcp/"}}}

	c := evalRunConfig(cfg, "/srv/ace/eval/acme/calc/run")
	if c.Workspace.Root != filepath.Join("/srv/ace/eval/acme/calc/run", "ace") || c.Store.URL != "" ||
		c.Tmux.Socket != eval.Socket("ace", "/srv/ace/eval/acme/calc/run") || !strings.HasPrefix(c.Tmux.Socket, "ace-eval-") ||
		c.Tmux.Socket == evalRunConfig(cfg, "/srv/ace/eval/acme/calc/other").Tmux.Socket {
		t.Errorf("root %s, store %q, socket %s", c.Workspace.Root, c.Store.URL, c.Tmux.Socket)
	}
	if c.Memory.Enabled || c.PR.Follow || c.Notify != nil || c.Agent.Default != "" || c.Agent.Fallback != nil {
		t.Errorf("memory %v, follow %v, notify %v, default %q, fallback %v", c.Memory.Enabled, c.PR.Follow, c.Notify, c.Agent.Default,
			c.Agent.Fallback)
	}
	if c.Tracker.Kind != "local" || c.GitHub.APIURL != "" || c.GitHub.TokenEnv != nil || c.Agents["claude"].GitHubMCP != "" {
		t.Errorf("tracker %+v, api %q, token %v, mcp %q", c.Tracker, c.GitHub.APIURL, c.GitHub.TokenEnv, c.Agents["claude"].GitHubMCP)
	}
	if cfg.Workspace.Root != "/srv/ace" || cfg.Agents["claude"].GitHubMCP == "" || cfg.Agent.Default != "claude" || !cfg.Memory.Enabled {
		t.Error("the user's configuration was changed")
	}
}
