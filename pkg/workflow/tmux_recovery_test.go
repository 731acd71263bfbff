package workflow

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tmuxops"
)

// TestTmuxRecoveredTellsTheRunsOnThatServer: a server a dead ace left unusable is recorded on each unfinished run
// of this host whose agent lived on it (tmux and live runners), and on no other; ending what dead aces left on a
// working server concerns no run.
func TestTmuxRecoveredTellsTheRunsOnThatServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "ace.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	e := withParts(&Engine{o: Options{Root: t.TempDir(), Store: st, Now: time.Now, Host: "h1"}, log: slog.New(slog.DiscardHandler)})
	runs := map[string]*store.Run{}
	for i, c := range []struct {
		name, runner, host, session string
		status                      store.Status
	}{
		{"tmux", store.RunnerTmux, "h1", "ace-widgets-1", store.StatusActive},
		{"live", store.RunnerLive, "h1", "ace-widgets-2", store.StatusWaitingInput},
		{"exec", store.RunnerExec, "h1", "", store.StatusActive},
		{"done", store.RunnerTmux, "h1", "ace-widgets-4", store.StatusDone},
		{"elsewhere", store.RunnerTmux, "h2", "ace-widgets-5", store.StatusActive},
	} {
		r := &store.Run{Repo: "acme/widgets", Issue: i + 1, Attempt: 1, Agent: "fake", Runner: c.runner, Step: "monitor",
			Status: c.status, Session: c.session, Host: c.host}
		if c.status == store.StatusDone {
			r.Step = "done"
		}
		if err := st.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
		runs[c.name] = r
	}
	tmuxEvents := func(r *store.Run) int {
		evs, err := st.Events(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, ev := range evs {
			if ev.Kind == string(EventTmux) {
				n++
			}
		}
		return n
	}
	e.TmuxRecovered(tmuxops.Recovery{Socket: "ace", Clients: []tmuxops.Orphan{{PID: 10, Owner: 9}}, Sessions: []string{"_ace-ctl-9"}})
	for name, r := range runs {
		if n := tmuxEvents(r); n != 0 {
			t.Errorf("%s run: %d tmux events for control clients ended on a working server", name, n)
		}
	}
	e.TmuxRecovered(tmuxops.Recovery{Socket: "ace", Clients: []tmuxops.Orphan{{PID: 10, Owner: 9}}, Unusable: true, Server: 8})
	for name, want := range map[string]int{"tmux": 1, "live": 1, "exec": 0, "done": 0, "elsewhere": 0} {
		if n := tmuxEvents(runs[name]); n != want {
			t.Errorf("%s run: %d tmux events, want %d", name, n, want)
		}
	}
}
