package workflow

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/sandbox"
	"github.com/aceworks/ace/pkg/store"
)

// eventsOnly is a Store that keeps the events appended to it; nothing else of it may be used.
type eventsOnly struct {
	Store
	events []store.Event
}

func (s *eventsOnly) AppendEvent(_ context.Context, _ int64, ev store.Event) error {
	s.events = append(s.events, ev)
	return nil
}

// TestBoxWiring: the engine's boxes are built from its own collaborators — a box under mode "auto" where boxes do
// not work says so as the run's event, which the run's watchers see too; under mode "on" the run fails at once
// (a terminal error, naming what to install), as it did when the box was the engine's own part.
func TestBoxWiring(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := config.Default()
	st := &eventsOnly{}
	refusing := sandbox.Refusing(fmt.Errorf("%w: bubblewrap (bwrap) is not installed; install: %s", sandbox.ErrUnavailable, sandbox.InstallHint))
	e := withParts(&Engine{cfg: cfg, o: Options{Config: cfg, Store: st, Root: t.TempDir(), Self: "/ace", Boxes: refusing}})
	seen, stop := e.Subscribe(4)
	defer stop()
	prof, _ := agents.Builtin("claude")
	r := &store.Run{ID: 1, Repo: "acme/widgets", Agent: "claude"}
	if p, err := e.box.Plan(ctx, r, prof); p != nil || err != nil {
		t.Fatalf("mode auto: plan %+v, %v; want the host", p, err)
	}
	if len(st.events) != 1 || st.events[0].Kind != string(EventSandbox) || !strings.Contains(st.events[0].Message, "claude runs unboxed") {
		t.Errorf("events %+v, want the run's sandbox event", st.events)
	}
	select {
	case p := <-seen:
		if p.Kind != EventSandbox {
			t.Errorf("watchers told %+v, want the sandbox event", p)
		}
	default:
		t.Error("the run's watchers were not told of the sandbox event")
	}
	cfg.Sandbox.Mode = config.SandboxOn
	if _, err := e.box.Plan(ctx, r, prof); !IsTerminal(err) || !strings.Contains(err.Error(), sandbox.InstallHint) {
		t.Errorf("mode on: %v, want a terminal error naming what to install", err)
	}
}
