package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestAgentAutoKeys: agent.default = "auto" with the agent it falls back to and the runs an agent needs; the
// fallback agent stands first among the configuration's agents.
func TestAgentAutoKeys(t *testing.T) {
	t.Parallel()
	cfg, _, err := loadFile(t, "[agent]\ndefault = \"auto\"\nauto_min_runs = 6\nauto_otherwise = \"claude\"\n")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Agent.Default != AgentAuto || cfg.Agent.AutoMinRuns != 6 || cfg.Agent.AutoOtherwise != "claude" {
		t.Errorf("agent %+v", cfg.Agent)
	}
	if names := cfg.AgentNames(); !slices.Equal(names, []string{"claude"}) {
		t.Errorf("agent names %v, want the fallback agent", names)
	}
	if d := Default(); d.Agent.AutoMinRuns != 10 || d.Agent.AutoOtherwise != "" {
		t.Errorf("default %+v", d.Agent)
	}
}

// TestAgentAutoErrorsNameFileLineAndKey: auto without the agent it falls back to, with one that does not exist,
// or with fewer than one run needed, is refused with the file, the line and the key.
func TestAgentAutoErrorsNameFileLineAndKey(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ file, want string }{
		{"[agent]\ndefault = \"auto\"\n", `agent.auto_otherwise: with agent.default = "auto", name the agent`},
		{"[agent]\ndefault = \"auto\"\nauto_otherwise = \"auto\"\n", `:3: agent.auto_otherwise: with agent.default = "auto"`},
		{"[agent]\ndefault = \"auto\"\nauto_otherwise = \"cluade\"\n", `:3: agent.auto_otherwise: "cluade" is neither a built-in agent`},
		{"[agent]\ndefault = \"auto\"\nauto_otherwise = \"codex\"\nauto_min_runs = 0\n", `:4: agent.auto_min_runs: must be at least 1, is 0`},
	} {
		_, path, err := loadFile(t, c.file)
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("Load(%q) = %v, want %q", c.file, err, c.want)
		}
	}
}
