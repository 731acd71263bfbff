package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// loadFile loads data as the configuration file ace.toml in a fresh directory.
func loadFile(t *testing.T, data string) (*Config, string, error) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "ace.toml")
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": dir}
	cfg, _, err := Load(path, func(k string) string { return env[k] })
	return cfg, path, err
}

func TestFallbackKeys(t *testing.T) {
	t.Parallel()
	cfg, _, err := loadFile(t, `[agent]
default = "claude"
fallback = ["codex", "mine"]
fallback_after = "45m"

[agents.mine]
command = "mine --task {task_file}"
`)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Agent.Fallback, []string{"codex", "mine"}) || cfg.Agent.FallbackAfter.Duration != 45*time.Minute {
		t.Errorf("fallback %v after %s", cfg.Agent.Fallback, cfg.Agent.FallbackAfter.Duration)
	}
	d := Default()
	if len(d.Agent.Fallback) != 0 || d.Agent.FallbackAfter.Duration != 30*time.Minute {
		t.Errorf("default: fallback %v after %s, want none after 30m", d.Agent.Fallback, d.Agent.FallbackAfter.Duration)
	}
}

// TestFallbackErrorsNameFileLineAndKey: an agent that does not exist, one named twice, an empty name and a
// negative fallback_after are refused, each with the file, the line and the key.
func TestFallbackErrorsNameFileLineAndKey(t *testing.T) {
	t.Parallel()
	_, path, err := loadFile(t, `# fallback agents
[agent]
default = "codex"
fallback = ["claude", "cluade", "claude", ""]

fallback_after = "-5m"
`)
	if err == nil || !errors.Is(err, ErrInvalid) {
		t.Fatalf("Load = %v, want an invalid configuration", err)
	}
	for _, want := range []string{
		path + `:4: agent.fallback[1]: "cluade" is neither a built-in agent (`,
		path + `:4: agent.fallback[2]: "claude" is listed twice`,
		path + `:4: agent.fallback[3]: empty`,
		path + `:6: agent.fallback_after: must not be negative`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Load error:\n%v\nwant it to contain %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "agent.fallback[0]") {
		t.Errorf("claude, built in, was refused: %v", err)
	}
}

// TestValidationErrorsGetTheLineOfTheirKey: a key written in its own table gets its line; one the file does not
// set (a default) or the environment set gets none, rather than a line that holds another value.
func TestValidationErrorsGetTheLineOfTheirKey(t *testing.T) {
	t.Parallel()
	_, path, err := loadFile(t, `[poll]
interval = "1s"

[trigger]
min_permission = "owner"
`)
	if err == nil || !strings.Contains(err.Error(), path+":5: trigger.min_permission:") {
		t.Errorf("Load = %v, want the line of trigger.min_permission", err)
	}
	if b := keyLine([]byte("[poll]\ninterval = \"1s\"\n"), "monitor.interval"); b != 0 {
		t.Errorf("monitor.interval, not in the file, got line %d (poll's interval)", b)
	}
}

// TestBestOfKeys: attempts and attempts_agents are read, the agents cycled; a bad count, an unknown agent and
// "auto" are refused with the file, the line and the key.
func TestBestOfKeys(t *testing.T) {
	t.Parallel()
	cfg, _, err := loadFile(t, `[agent]
attempts = 3
attempts_agents = ["claude", "codex"]
`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for k := 1; k <= cfg.Agent.Attempts; k++ {
		got = append(got, cfg.AttemptAgent("gemini", k))
	}
	if !slices.Equal(got, []string{"claude", "codex", "claude"}) {
		t.Errorf("attempts' agents %v, want claude, codex, claude", got)
	}
	if d := Default(); d.Agent.Attempts != 1 || d.AttemptAgent("gemini", 2) != "gemini" || d.Labels.BestOfPrefix != "ace:best-of-" {
		t.Errorf("default: %d attempts, attempt 2 with %s, label %q", d.Agent.Attempts, d.AttemptAgent("gemini", 2), d.Labels.BestOfPrefix)
	}
	_, path, err := loadFile(t, `[agent]
attempts = 12
attempts_agents = ["claude", "cluade", "auto"]
`)
	for _, want := range []string{
		path + `:2: agent.attempts: must be 1 (one agent per issue) to 9, is 12`,
		path + `:3: agent.attempts_agents[1]: "cluade" is neither`,
		path + `:3: agent.attempts_agents[2]: "auto" chooses one agent per issue`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Load error:\n%v\nwant it to contain %q", err, want)
		}
	}
}
