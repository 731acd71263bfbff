package workflow

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/memory"
	"github.com/aceworks/ace/pkg/store"
)

type recordingMemory struct{ entries []memory.Entry }

func (m *recordingMemory) CopyIn(context.Context, string, string, ...string) (memory.Merged, error) {
	return memory.Merged{}, nil
}
func (m *recordingMemory) MergeBack(context.Context, string, string, ...string) (memory.Merged, error) {
	return memory.Merged{}, nil
}
func (m *recordingMemory) Record(_ context.Context, _ string, e memory.Entry) error {
	m.entries = append(m.entries, e)
	return nil
}

type fixedSecrets map[string]string

func (s fixedSecrets) ResolveAll(_ context.Context, names []string) (map[string]string, error) {
	out := map[string]string{}
	for _, n := range names {
		v, ok := s[n]
		if !ok {
			return nil, errors.New("no " + n)
		}
		out[n] = v
	}
	return out, nil
}

// TestStatusLineKeepsNoSecret: the reason a failed run gives in status.md, which every later agent reads, has its
// agent's secrets, the tracker's token variables and the tracker's own token masked (the error may quote what
// the agent printed).
func TestStatusLineKeepsNoSecret(t *testing.T) {
	t.Parallel()
	mem := &recordingMemory{}
	e := withParts(&Engine{cfg: config.Default(), log: slog.New(slog.DiscardHandler), o: Options{
		Memory:  mem,
		Tracker: gitHubTracker(t, "ghs_fallback_9012"), // found under GITHUB_CONTROL_API_KEY
		Secrets: fixedSecrets{"AGENT_KEY": "sk-agent-secret-1234", "GITHUB_TOKEN": "ghs_token_5678"},
		Profile: func(string) (agents.Profile, error) {
			return agents.Profile{Name: "x", Secrets: []string{"AGENT_KEY"}}, nil
		},
		Now: time.Now,
	}})
	r := &store.Run{Repo: "acme/widgets", Issue: 7, Agent: "x",
		Error: "the agent said: export AGENT_KEY=sk-agent-secret-1234 and push with ghs_token_5678 or ghs_fallback_9012"}
	e.memory.remember(context.Background(), r, "failed")
	if len(mem.entries) != 1 {
		t.Fatalf("%d status entries, want 1", len(mem.entries))
	}
	d := mem.entries[0].Detail
	if strings.Contains(d, "sk-agent-secret-1234") || strings.Contains(d, "ghs_token_5678") || strings.Contains(d, "ghs_fallback_9012") ||
		!strings.Contains(d, "export AGENT_KEY=***") {
		t.Fatalf("status detail %q", d)
	}
}
