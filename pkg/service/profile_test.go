package service_test

import (
	"strings"
	"testing"

	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/service"
)

// TestProfileFromTheAgentTable: what [agents.<name>] says reaches the resolved profile, each key written once
// (agents.Override), for a built-in agent and for one ace.toml alone defines.
func TestProfileFromTheAgentTable(t *testing.T) {
	cfg, err := config.Parse("ace.toml", []byte(`
[agents.claude]
model = "opus"
auto_approve = true
nudge = "go on"
env = { LANG = "C" }

[agents.claude.markers]
ready = '^READY>'

[agents.mine]
command = "mine --go"
runner = "tmux"
`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := service.Profile(cfg, "claude")
	if err != nil {
		t.Fatal(err)
	}
	if p.Model != "opus" || !p.AutoApprove || p.Nudge != "go on" || p.Env["LANG"] != "C" || !p.IsReady("READY> ") {
		t.Errorf("claude's profile does not carry its table: model %q, auto_approve %v, nudge %q, env %v",
			p.Model, p.AutoApprove, p.Nudge, p.Env)
	}
	if p.Command == "" || p.Headless == "" {
		t.Errorf("the built-in command and headless command were lost: %q, %q", p.Command, p.Headless)
	}
	m, err := service.Profile(cfg, "mine")
	if err != nil || m.Command != "mine --go" || m.Runner != "tmux" {
		t.Errorf("custom agent: %+v, %v", m, err)
	}
	if _, err := service.Profile(cfg, "nobody"); err == nil || !strings.Contains(err.Error(), "agents.nobody: unknown agent") {
		t.Errorf("an agent no table defines: %v", err)
	}
}
