package runbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/sandbox"
	"github.com/aceworks/ace/pkg/store"
)

// eventsOnly keeps the events recorded to it, as a run's step records them and as its proxy does.
type eventsOnly struct {
	events []store.Event
}

func (s *eventsOnly) AppendEvent(_ context.Context, _ int64, ev store.Event) error {
	s.events = append(s.events, ev)
	return nil
}

func (s *eventsOnly) event(_ context.Context, r *store.Run, kind, msg string) {
	s.events = append(s.events, store.Event{Kind: kind, Step: r.Step, Message: msg})
}

// TestPlanWithoutBoxes: where boxes cannot be built, mode auto runs the agent unboxed and says why and what to
// install once per run; mode on fails the run with the same words; mode off says nothing.
func TestPlanWithoutBoxes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := config.Default()
	st := &eventsOnly{}
	sb := New(Options{Config: cfg, Store: st, Events: st.event, Root: t.TempDir(), Self: "/ace",
		Detector: sandbox.Refusing(fmt.Errorf("%w: bubblewrap (bwrap) is not installed; install: %s", sandbox.ErrUnavailable, sandbox.InstallHint))})
	prof, _ := agents.Builtin("claude")
	r := &store.Run{ID: 1, Repo: "acme/widgets", Agent: "claude"}
	for range 2 {
		if p, err := sb.Plan(ctx, r, prof); p != nil || err != nil {
			t.Fatalf("mode auto: plan %+v, %v; want the host", p, err)
		}
	}
	if len(st.events) != 1 || st.events[0].Kind != EventSandbox || !strings.Contains(st.events[0].Message, "claude runs unboxed") ||
		!strings.Contains(st.events[0].Message, sandbox.InstallHint) {
		t.Errorf("events %+v, want one saying the agent runs unboxed and what to install", st.events)
	}
	if line := Line(r); !strings.HasPrefix(line, "unboxed: sandbox unavailable") {
		t.Errorf("sandbox line %q", line)
	}
	cfg.Sandbox.Mode = config.SandboxOn
	if _, err := sb.Plan(ctx, r, prof); !errors.Is(err, ErrNoBox) || !strings.Contains(err.Error(), sandbox.InstallHint) {
		t.Errorf("mode on: %v, want a terminal error naming what to install", err)
	}
	cfg.Sandbox.Mode = config.SandboxOff
	if p, err := sb.Plan(ctx, r, prof); p != nil || err != nil || len(st.events) != 1 {
		t.Errorf("mode off: %+v, %v, %d events", p, err, len(st.events))
	}
}
