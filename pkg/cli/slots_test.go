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

// TestLsAndHostsShowSlots: `ace ls` says what each run's agent is to its host's slots (idle, released, waiting
// for a slot) and ends with each live host's slots and the queue; `ace hosts` lists the agents working and idle
// against poll.max_concurrent, the runs waiting and for how long, the working copies held, and the queue.
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
	now := time.Now()
	for i, slot := range []store.Slot{store.SlotWork, store.SlotNone, store.SlotWait, store.SlotIdle} {
		step, follow := "follow_pr", &store.FollowState{}
		if i == 0 {
			step, follow = "monitor", nil
		}
		r := &store.Run{Repo: "acme/widgets", Issue: 1 + i, Attempt: 1, Agent: "codex", Runner: "tmux", Step: step,
			Status: store.StatusActive, Host: "build-01", Session: "ace-widgets-" + string(rune('1'+i)),
			Workdir: filepath.Join(root, "w", string(rune('1'+i))), State: store.RunState{Follow: follow},
			Slot: slot, SlotAt: now.Add(-90 * time.Second)}
		if err := st.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.SetQueue(ctx, []string{"acme/widgets"}, []store.Queued{{Repo: "acme/widgets", Issue: 9}}); err != nil {
		t.Fatal(err)
	}
	if err := st.Heartbeat(ctx, store.Host{Name: "build-01", MaxConcurrent: 2, Running: 2}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	var out bytes.Buffer
	app := &App{Config: cfg, Stdout: &out, Stderr: &out}
	if err := runLs(ctx, app, false, false); err != nil {
		t.Fatal(err)
	}
	ls := out.String()
	for _, want := range []string{"ace-widgets-1  ", "ace-widgets-2 (released)", "ace-widgets-3 (waiting for a slot)", "ace-widgets-4 (idle)",
		"host build-01: 1 agent working and 1 idle of 2; 1 run waiting for a slot (for 1m); 4 working copies held\n" +
			"queue: 2 issues waiting for a slot (1 labelled and not started, 1 on a host), the oldest for 1m\n"} {
		if !strings.Contains(ls, want) {
			t.Errorf("ace ls lacks %q:\n%s", want, ls)
		}
	}
	out.Reset()
	if err := runHosts(ctx, app, false); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || strings.Join(strings.Fields(lines[0]), " ") != "HOST STATE AGENTS WORKING IDLE WAITING HELD HEARTBEAT UP SINCE" ||
		!strings.HasPrefix(strings.Join(strings.Fields(lines[1]), " "), "build-01 alive 2/2 1 1 1 (1m) 4 ") ||
		!strings.HasPrefix(lines[2], "queue: 2 issues waiting") {
		t.Errorf("ace hosts:\n%s", out.String())
	}
}
