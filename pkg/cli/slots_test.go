package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
)

// TestLsAndHostsShowSlots: `ace ls` marks a released run's agent and ends with each live host's slots; `ace hosts`
// lists live agents against poll.max_concurrent, the waiting rounds and the working copies held.
func TestLsAndHostsShowSlots(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	cfg := config.Default()
	cfg.Workspace.Root = root
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(root, "ace.db"))
	if err != nil {
		t.Fatal(err)
	}
	for i, follow := range []*store.FollowState{nil, {Released: true}, {Released: true, WaitingSlot: time.Now()}} {
		step := "monitor"
		if follow != nil {
			step = "follow_pr"
		}
		r := &store.Run{Repo: "acme/widgets", Issue: 1 + i, Attempt: 1, Agent: "codex", Runner: "tmux", Step: step,
			Status: store.StatusActive, Host: "build-01", Session: "ace-widgets-" + string(rune('1'+i)),
			Workdir: filepath.Join(root, "w", string(rune('1'+i))), State: store.RunState{Follow: follow}}
		if err := st.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Heartbeat(ctx, store.Host{Name: "build-01", MaxConcurrent: 2, Running: 1}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	var out bytes.Buffer
	app := &App{Config: cfg, Stdout: &out, Stderr: &out}
	if err := runLs(ctx, app, false, false); err != nil {
		t.Fatal(err)
	}
	ls := out.String()
	if strings.Count(ls, "released") != 2 || !strings.Contains(ls, "ace-widgets-1") {
		t.Errorf("ace ls does not mark the released runs:\n%s", ls)
	}
	if want := "host build-01: 1/2 agents live, 1 round waiting for a slot, 3 working copies held\n"; !strings.HasSuffix(ls, want) {
		t.Errorf("ace ls ends:\n%s\nwant %q", ls, want)
	}
	out.Reset()
	if err := runHosts(ctx, app, false); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "HOST STATE AGENTS WAITING HELD HEARTBEAT UP SINCE" ||
		!strings.HasPrefix(strings.Join(strings.Fields(lines[1]), " "), "build-01 alive 1/2 1 3 ") {
		t.Errorf("ace hosts:\n%s", out.String())
	}
}
