package tmuxops_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/testkit"
	"github.com/aceworks/ace/pkg/tmuxops"
)

// TestControlConnectionSpawnsNothingPerCall: with WithControl, listing panes and sessions, capturing screens,
// asking for a session and for the server's PID after the first listing runs no tmux process, survives output that mimics the protocol's own markers, hides its own
// session, and neither outlives the server nor revives it.
func TestControlConnectionSpawnsNothingPerCall(t *testing.T) {
	t.Parallel()
	var spawned atomic.Int64
	socket := socketName("ace-ctl-test")
	c := tmuxops.New(socket, tmuxops.WithControl(), tmuxops.WithExec(func(ctx context.Context, name string, args ...string) *exec.Cmd {
		spawned.Add(1)
		return exec.CommandContext(ctx, name, args...)
	}))
	plain := tmuxops.New(socket)
	removeDirsLast(t)
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
	testkit.WaitFor(t, "the pane's output", 20*time.Second, func() bool {
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
	if ok, err := c.HasSession(ctx, "ace-ctl-1"); !ok || err != nil {
		t.Fatalf("has the session: %v %v", ok, err)
	}
	if ok, err := c.HasSession(ctx, "ace-ctl"); ok || err != nil {
		t.Fatalf("has a session of a name no session has: %v %v", ok, err)
	}
	if s, err := c.Sessions(ctx, "ace-"); err != nil || len(s) != 1 || s[0] != "ace-ctl-1" {
		t.Fatalf("sessions: %v %v", s, err)
	}
	server, err := c.ServerPID(ctx)
	if err != nil || server <= 0 {
		t.Fatalf("server pid: %d %v", server, err)
	}
	if n := spawned.Load() - before; n != 0 {
		t.Fatalf("%d tmux processes for 104 reads over the control connection", n)
	}
	if want, err := plain.ServerPID(ctx); err != nil || want != server {
		t.Fatalf("server pid over the control connection %d, as a process %d (%v)", server, want, err)
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
		if ok, err := c.HasSession(ctx, "ace-ctl-1"); ok || err != nil {
			t.Fatalf("has the session after the server died: %v %v", ok, err)
		}
		if s, err := c.Sessions(ctx, "ace-"); err != nil || len(s) != 0 {
			t.Fatalf("sessions after the server died: %v %v", s, err)
		}
	}
	if out, err := exec.Command("tmux", "-L", socket, "ls").CombinedOutput(); err == nil {
		t.Fatalf("the monitor revived the server: %s", out)
	}
}

// TestControlSessionEndsWithTheClient: closing the client removes its hidden session.
func TestControlSessionEndsWithTheClient(t *testing.T) {
	t.Parallel()
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
	testkit.WaitFor(t, "the control session to go", 20*time.Second, func() bool { return !strings.Contains(sessions(), tmuxops.ControlPrefix) })
	if !strings.Contains(sessions(), "ace-ctl-2") {
		t.Fatalf("closing the monitor ended an agent session: %q", sessions())
	}
}

// monitorMain (the test binary run as `monitor SOCKET`) opens a control connection, says "ready" and waits to
// be killed: an ace that dies without closing its connection.
func monitorMain(socket string) int {
	c := tmuxops.New(socket, tmuxops.WithControl())
	for range 2 {
		if _, err := c.Panes(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	fmt.Println("ready")
	select {}
}

// TestAKilledMonitorTakesNoAgentWithIt: a monitor SIGKILLed with its control connection open, then any tmux
// command (here a listing, as the next ace or a user would run), must leave the agents' sessions alive — tmux
// 3.3a segfaulted when destroy-unattached ended the dead monitor's session, and every agent went with the
// server. The next monitor ends the dead one's session.
func TestAKilledMonitorTakesNoAgentWithIt(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	ctx := context.Background()
	if err := c.NewSession(ctx, tmuxops.SessionSpec{Name: "ace-kept-1", Dir: t.TempDir(), Argv: []string{"sleep", "600"}}); err != nil {
		t.Fatal(err)
	}
	sessions := func() string {
		out, _ := exec.Command("tmux", "-L", c.Socket(), "ls", "-F", "#{session_name}").CombinedOutput()
		return string(out)
	}
	for round := range 5 {
		cmd := exec.Command(os.Args[0], "monitor", c.Socket())
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil || line != "ready\n" {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("monitor: %q %v", line, err)
		}
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		for range 20 {
			if s := sessions(); !strings.Contains(s, "ace-kept-1") {
				t.Fatalf("round %d: the agent's session is gone after its monitor was killed: %q", round, s)
			}
		}
	}
	if n := strings.Count(sessions(), tmuxops.ControlPrefix); n == 0 {
		t.Fatal("the killed monitors' control sessions were never there")
	}
	mon := tmuxops.New(c.Socket(), tmuxops.WithControl())
	for range 2 {
		if _, err := mon.Panes(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(sessions(), tmuxops.ControlPrefix); n != 1 {
		t.Fatalf("%d control sessions with one live monitor: %q", n, sessions())
	}
	if err := mon.Close(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the control session to go", 20*time.Second, func() bool { return !strings.Contains(sessions(), tmuxops.ControlPrefix) })
}
