package tmuxops_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/tmuxops"
)

// TestControlConnectionSpawnsNothingPerCall: with WithControl, listing panes and capturing screens after the
// first listing runs no tmux process, survives output that mimics the protocol's own markers, hides its own
// session, and neither outlives the server nor revives it.
func TestControlConnectionSpawnsNothingPerCall(t *testing.T) {
	var spawned atomic.Int64
	socket := fmt.Sprintf("ace-ctl-test-%d-%d", os.Getpid(), time.Now().UnixNano()%1e6)
	c := tmuxops.New(socket, tmuxops.WithControl(), tmuxops.WithExec(func(ctx context.Context, name string, args ...string) *exec.Cmd {
		spawned.Add(1)
		return exec.CommandContext(ctx, name, args...)
	}))
	plain := tmuxops.New(socket)
	t.Cleanup(func() {
		_ = c.Close()
		if err := plain.KillServer(context.Background()); err != nil {
			t.Errorf("kill server: %v", err)
		}
	})
	ctx := context.Background()
	// Lines that look like the end of a control block must come back as screen text, not end the reply.
	script := `printf '%%end 1 2 1\n%%error 3 4 1\n%%begin 5 6 1\nlast line\n'; exec sleep 600`
	if err := c.NewSession(ctx, tmuxops.SessionSpec{Name: "ace-ctl-1", Dir: t.TempDir(), Argv: []string{"sh", "-c", script}}); err != nil {
		t.Fatal(err)
	}
	if p, err := c.Panes(ctx); err != nil || len(p) != 1 {
		t.Fatalf("first listing: %v %v", p, err)
	}
	var screen string
	waitFor(t, "the pane's output", func() bool {
		s, err := c.Capture(ctx, "ace-ctl-1", 0)
		screen = s
		return err == nil && strings.Contains(s, "last line")
	})
	if !strings.Contains(screen, "%end 1 2 1\n%error 3 4 1\n%begin 5 6 1\nlast line") {
		t.Fatalf("screen through control mode: %q", screen)
	}
	before := spawned.Load()
	for range 50 {
		p, err := c.Panes(ctx)
		if err != nil || len(p) != 1 || p[0].Session != "ace-ctl-1" || p[0].PID == 0 {
			t.Fatalf("listing: %+v %v (the control session must stay hidden)", p, err)
		}
		if _, err := c.Capture(ctx, "ace-ctl-1", 0); err != nil {
			t.Fatal(err)
		}
	}
	if n := spawned.Load() - before; n != 0 {
		t.Fatalf("%d tmux processes for 100 reads over the control connection", n)
	}
	if _, err := c.Capture(ctx, "ace-nope", 0); err == nil {
		t.Fatal("capturing a missing session succeeded")
	}
	if p, err := c.Panes(ctx); err != nil || len(p) != 1 {
		t.Fatalf("an error reply broke the connection: %v %v", p, err)
	}

	if err := plain.KillServer(ctx); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if p, err := c.Panes(ctx); err != nil || len(p) != 0 {
			t.Fatalf("after the server died: %v %v", p, err)
		}
	}
	if out, err := exec.Command("tmux", "-L", socket, "ls").CombinedOutput(); err == nil {
		t.Fatalf("the monitor revived the server: %s", out)
	}
}

// TestControlSessionEndsWithTheClient: closing the client removes its hidden session.
func TestControlSessionEndsWithTheClient(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	mon := tmuxops.New(c.Socket(), tmuxops.WithControl())
	if err := c.NewSession(ctx, tmuxops.SessionSpec{Name: "ace-ctl-2", Dir: t.TempDir(), Argv: []string{"sleep", "600"}}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := mon.Panes(ctx); err != nil {
			t.Fatal(err)
		}
	}
	sessions := func() string {
		out, err := exec.Command("tmux", "-L", c.Socket(), "ls", "-F", "#{session_name}").CombinedOutput()
		if err != nil {
			t.Logf("tmux ls: %v: %s", err, out)
		}
		return string(out)
	}
	if s := sessions(); !strings.Contains(s, tmuxops.ControlPrefix) || !strings.Contains(s, "ace-ctl-2") {
		t.Fatalf("sessions while monitoring: %q", s)
	}
	if err := mon.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the control session to go", func() bool { return !strings.Contains(sessions(), tmuxops.ControlPrefix) })
	if !strings.Contains(sessions(), "ace-ctl-2") {
		t.Fatalf("closing the monitor ended an agent session: %q", sessions())
	}
}
