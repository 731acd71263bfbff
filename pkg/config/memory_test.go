package config

import (
	"strings"
	"testing"

	"github.com/aceworks/ace/pkg/agents"
)

func TestValidateMemoryAndCompaction(t *testing.T) {
	cfg := Default()
	if !cfg.Memory.Enabled || cfg.Memory.AgentsMaxBytes != 64<<10 || cfg.Memory.StatusMaxBytes != 256<<10 {
		t.Fatalf("memory defaults %+v", cfg.Memory)
	}
	cfg.Memory.AgentsMaxBytes = 10
	cfg.Memory.StatusMaxBytes = -1
	cfg.Monitor.CompactThreshold = -5
	cfg.Agents["claude"] = AgentConfig{Override: agents.Override{ContextFile: "../CLAUDE.md"}}
	cfg.Agents["codex"] = AgentConfig{Override: agents.Override{ContextFile: ".ace/memory/AGENTS.md"}}
	err := cfg.Validate()
	for _, want := range []string{"memory.agents_max_bytes: must be at least 1024", "memory.status_max_bytes: must be at least 1024",
		"monitor.compact_threshold: must not be negative", "agents.claude.context_file:", "agents.codex.context_file:"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want %q", err, want)
		}
	}
	ok := Default()
	ok.Monitor.CompactThreshold = 0
	ok.Agents["mine"] = AgentConfig{Override: agents.Override{Command: "mine", ContextFile: "CONVENTIONS.md"}}
	if err := ok.Validate(); err != nil {
		t.Errorf("Validate() = %v for compaction off and a plain context file", err)
	}
}
