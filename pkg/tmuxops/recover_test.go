package tmuxops_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/testkit"
	"github.com/aceworks/ace/pkg/procs"
	"github.com/aceworks/ace/pkg/tmuxops"
)

// oldMonitorMain (the test binary run as `oldmonitor SOCKET [SESSION]`) opens a control connection the way ace
// did before its control clients were tied to it: a tmux -C client on a session named after this process (or
// SESSION), nothing more. It prints the client's PID and waits to be killed, reading nothing.
func oldMonitorMain(socket, name string) int {
	if name == "" {
		name = tmuxops.ControlPrefix + strconv.Itoa(os.Getpid())
	}
	cmd := exec.Command("tmux", "-L", socket, "-f", "/dev/null", "-C", "new-session", "-A", "-s", name, "-x", "20", "-y", "5", "cat")
	in, err := cmd.StdinPipe()
	if err != nil {
		return 1
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	br := bufio.NewReader(out)
	for {
		l, err := br.ReadString('\n')
		if err != nil {
			fmt.Fprintln(os.Stderr, "attach:", err)
			return 1
		}
		if strings.HasPrefix(l, "%session-changed") {
			break
		}
	}
	fmt.Println(cmd.Process.Pid)
	_ = in
	time.Sleep(time.Hour)
	return 0
}

// startMonitor runs the test binary as program (monitor or oldmonitor) on socket, waits for its first line and
// returns the process (killed at cleanup) with that line.
func startMonitor(t *testing.T, program string, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{program}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	reap := func() { once.Do(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }) }
	t.Cleanup(reap)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		reap()
		t.Fatalf("%s: %q %v", program, line, err)
	}
	return cmd, strings.TrimSpace(line)
}

// floodControlSession has tmux hold output for the control client attached to name: the session's `cat` echoes
// 100 KB, more than a pipe holds, to a client that reads nothing.
func floodControlSession(t *testing.T, socket, name string) {
	t.Helper()
	text := strings.Repeat(strings.Repeat("x", 99)+"\n", 1000)
	path := filepath.Join(t.TempDir(), "flood.txt")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("tmux", "-L", socket, "load-buffer", path, ";", "paste-buffer", "-t", "="+name+":").CombinedOutput(); err != nil {
		t.Fatalf("paste into %s: %v: %s", name, err, out)
	}
	time.Sleep(300 * time.Millisecond) // cat echoes it meanwhile; nothing to wait on but the server's own pace
}

// controlClients are the live tmux clients of socket's control session name.
func controlClients(socket, name string) []int {
	var out []int
	for _, p := range procs.All() {
		argv := procs.Cmdline(p)
		if procs.Alive(p) && procs.Comm(p) == "tmux: client" && slices.Contains(argv, socket) && slices.Contains(argv, name) {
			out = append(out, p)
		}
	}
	return out
}

// tmuxLs is what `tmux ls` says on socket.
func tmuxLs(socket string) string {
	out, _ := exec.Command("tmux", "-L", socket, "ls", "-F", "#{session_name}").CombinedOutput()
	return string(out)
}

// TestAKilledAcesControlClientDiesWithIt: ace SIGKILLed while tmux holds output for its control client (what an
// idle monitor always risks: it reads only when it asks something) takes the client with it, and `tmux
// kill-server` afterwards ends the server — a client left behind held the server half-exited, refusing every
// later ace ("server exited unexpectedly").
func TestAKilledAcesControlClientDiesWithIt(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	ctx := context.Background()
	if err := c.NewSession(ctx, tmuxops.SessionSpec{Name: "ace-agent-1", Dir: t.TempDir(), Argv: []string{"sleep", "600"}}); err != nil {
		t.Fatal(err)
	}
	mon, _ := startMonitor(t, "monitor", c.Socket())
	name := tmuxops.ControlPrefix + strconv.Itoa(mon.Process.Pid)
	if len(controlClients(c.Socket(), name)) != 1 {
		t.Fatalf("no control client of the monitor: %q", tmuxLs(c.Socket()))
	}
	floodControlSession(t, c.Socket(), name)
	_ = mon.Process.Signal(syscall.SIGKILL)
	_ = mon.Wait()
	testkit.WaitFor(t, "the killed monitor's control client to go", 10*time.Second, func() bool {
		return len(controlClients(c.Socket(), name)) == 0
	})
	if out, err := exec.Command("tmux", "-L", c.Socket(), "kill-server").CombinedOutput(); err != nil {
		t.Fatalf("kill-server: %v: %s", err, out)
	}
	testkit.WaitFor(t, "the server to exit", 10*time.Second, func() bool {
		return strings.Contains(tmuxLs(c.Socket()), "no server running")
	})
}

// leaveHalfExitedServer builds what an ace killed before this fix left once someone ran `tmux kill-server`: an
// agent session, a control client of a dead ace that tmux holds output for, and the server half-exited.
func leaveHalfExitedServer(t *testing.T, c *tmuxops.Client) (orphan int) {
	t.Helper()
	ctx := context.Background()
	if err := c.NewSession(ctx, tmuxops.SessionSpec{Name: "ace-agent-1", Dir: t.TempDir(), Argv: []string{"sleep", "600"}}); err != nil {
		t.Fatal(err)
	}
	orphan = leaveOrphanClient(t, c.Socket())
	if out, err := exec.Command("tmux", "-L", c.Socket(), "kill-server").CombinedOutput(); err != nil {
		t.Fatalf("kill-server: %v: %s", err, out)
	}
	// What every later ace met: no server, yet none can start.
	if ls := tmuxLs(c.Socket()); !strings.Contains(ls, "server exited unexpectedly") {
		t.Fatalf("the setup did not leave the server half-exited: tmux ls says %q", ls)
	}
	return orphan
}

// leaveOrphanClient kills an old-style monitor (on session name, or one named after it) while tmux holds output
// for its control client, which stays.
func leaveOrphanClient(t *testing.T, socket string, name ...string) int {
	t.Helper()
	mon, line := startMonitor(t, "oldmonitor", append([]string{socket}, name...)...)
	client, err := strconv.Atoi(line)
	if err != nil {
		t.Fatalf("oldmonitor said %q", line)
	}
	t.Cleanup(func() { _ = syscall.Kill(client, syscall.SIGKILL) })
	session := tmuxops.ControlPrefix + strconv.Itoa(mon.Process.Pid)
	if len(name) > 0 {
		session = name[0]
	}
	floodControlSession(t, socket, session)
	_ = mon.Process.Signal(syscall.SIGKILL)
	_ = mon.Wait()
	time.Sleep(200 * time.Millisecond)
	if !procs.Alive(client) {
		t.Fatal("the setup left no orphaned control client: the dead monitor's client exited by itself")
	}
	return client
}

// recordingClient is a client on a socket of its own (killed at cleanup) that keeps the recoveries it reports.
func recordingClient(t *testing.T) (*tmuxops.Client, func() []tmuxops.Recovery) {
	var mu sync.Mutex
	var recs []tmuxops.Recovery
	c := tmuxops.New(newClient(t).Socket(), tmuxops.WithRecovered(func(r tmuxops.Recovery) {
		mu.Lock()
		recs = append(recs, r)
		mu.Unlock()
	}))
	return c, func() []tmuxops.Recovery {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(recs)
	}
}

// TestANextAceStartsOnAServerADeadAceLeftUnusable: the next ace's first session starts at once on such a
// socket: the orphaned client and the half-exited server are ended, and it is told so (Leftovers says it first,
// ending nothing, for ace doctor).
func TestANextAceStartsOnAServerADeadAceLeftUnusable(t *testing.T) {
	t.Parallel()
	c, recoveries := recordingClient(t)
	orphan := leaveHalfExitedServer(t, c)
	ctx := context.Background()
	left, err := c.Leftovers(ctx)
	if err != nil || !left.Unusable || left.Server == 0 || len(left.Clients) != 1 || left.Clients[0].PID != orphan {
		t.Fatalf("leftovers %+v %v: want the half-exited server and client %d", left, err, orphan)
	}
	if !procs.Alive(orphan) {
		t.Fatal("Leftovers ended the orphaned client")
	}
	if err := c.NewSession(ctx, tmuxops.SessionSpec{Name: "ace-agent-2", Dir: t.TempDir(), Argv: []string{"sleep", "600"}}); err != nil {
		t.Fatalf("the next ace cannot start a session: %v", err)
	}
	if ok, err := c.HasSession(ctx, "ace-agent-2"); !ok || err != nil {
		t.Fatalf("the new session is not there: %v %v (%s)", ok, err, tmuxLs(c.Socket()))
	}
	if procs.Alive(orphan) {
		t.Error("the orphaned control client is still there")
	}
	recs := recoveries()
	if len(recs) != 1 || !recs[0].Unusable || recs[0].Killed || recs[0].Server == 0 || len(recs[0].Clients) != 1 || recs[0].Clients[0].PID != orphan {
		t.Fatalf("recoveries reported: %+v", recs)
	}
	if s := recs[0].String(); !strings.Contains(s, "half-exited") || !strings.Contains(s, "exited once they were gone") || !strings.Contains(s, strconv.Itoa(orphan)) {
		t.Errorf("the recovery says %q", s)
	}
}

// TestAServerNothingEndsIsKilled: a server held half-exited by a control client that is no ace's (a user's,
// attached by hand) is given unusableFor to exit, then killed, and the next session starts on a fresh one.
func TestAServerNothingEndsIsKilled(t *testing.T) {
	t.Parallel()
	c, recoveries := recordingClient(t)
	ctx := context.Background()
	if err := c.NewSession(ctx, tmuxops.SessionSpec{Name: "ace-agent-1", Dir: t.TempDir(), Argv: []string{"sleep", "600"}}); err != nil {
		t.Fatal(err)
	}
	server, err := c.ServerPID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	client := leaveOrphanClient(t, c.Socket(), "someones-ctl")
	if out, err := exec.Command("tmux", "-L", c.Socket(), "kill-server").CombinedOutput(); err != nil {
		t.Fatalf("kill-server: %v: %s", err, out)
	}
	if err := c.NewSession(ctx, tmuxops.SessionSpec{Name: "ace-agent-2", Dir: t.TempDir(), Argv: []string{"sleep", "600"}}); err != nil {
		t.Fatalf("no session on a fresh server: %v", err)
	}
	if now, err := c.ServerPID(ctx); err != nil || now == server {
		t.Errorf("server %d %v: want a fresh one, not %d", now, err, server)
	}
	testkit.WaitFor(t, "the client of the killed server to go", 10*time.Second, func() bool { return !procs.Alive(client) })
	recs := recoveries()
	if len(recs) != 1 || !recs[0].Unusable || !recs[0].Killed || recs[0].Server != server || len(recs[0].Clients) != 0 {
		t.Fatalf("recoveries %+v: want the server %d killed, no client of an ace's ended", recs, server)
	}
}

// TestRecoverEndsWhatDeadAcesLeft: before it uses the server, an ace ends the control clients and sessions of
// dead aces, and nothing else: the agents' sessions and the server stay.
func TestRecoverEndsWhatDeadAcesLeft(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	ctx := context.Background()
	if err := c.NewSession(ctx, tmuxops.SessionSpec{Name: "ace-agent-1", Dir: t.TempDir(), Argv: []string{"sleep", "600"}}); err != nil {
		t.Fatal(err)
	}
	server, err := c.ServerPID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	live := tmuxops.New(c.Socket(), tmuxops.WithControl()) // a live ace's connection, which must stay
	t.Cleanup(func() { _ = live.Close() })
	if _, err := live.Panes(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := live.Panes(ctx); err != nil {
		t.Fatal(err)
	}
	orphan := leaveOrphanClient(t, c.Socket())
	rec, err := c.Recover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Clients) != 1 || rec.Clients[0].PID != orphan || len(rec.Sessions) != 1 || rec.Unusable {
		t.Fatalf("recovery %+v: want client %d and its session, the server kept", rec, orphan)
	}
	if procs.Alive(orphan) {
		t.Error("the orphaned control client is still there")
	}
	ls := tmuxLs(c.Socket())
	if strings.Count(ls, tmuxops.ControlPrefix) != 1 || !strings.Contains(ls, "ace-agent-1") {
		t.Errorf("sessions after the recovery: %q (want the agent's and the live ace's control session)", ls)
	}
	if now, err := c.ServerPID(ctx); err != nil || now != server {
		t.Errorf("server %d %v, was %d", now, err, server)
	}
	if again, err := c.Recover(ctx); err != nil || !again.Empty() {
		t.Errorf("a second recovery found %+v %v", again, err)
	}
}

// TestNoEnvFileOutlivesAStartThatFailed: the env file (secrets) written for a pane that tmux did not start is
// removed at once.
func TestNoEnvFileOutlivesAStartThatFailed(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	ctx := context.Background()
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	spec := func(name string) tmuxops.SessionSpec {
		return tmuxops.SessionSpec{Name: name, Dir: dir, Argv: []string{"sleep", "600"},
			Secrets: map[string]string{"KEY": "secret-value"}, Launcher: []string{os.Args[0], "__launch"}, RuntimeDir: run}
	}
	if err := c.NewSession(ctx, spec("ace-agent-1")); err != nil {
		t.Fatal(err)
	}
	if err := c.Respawn(ctx, spec("ace-not-there")); err == nil {
		t.Fatal("respawned a session that does not exist")
	}
	failing := tmuxops.New(c.Socket(), tmuxops.WithExec(func(ctx context.Context, name string, args ...string) *exec.Cmd {
		if slices.Contains(args, "new-session") {
			return exec.CommandContext(ctx, "sh", "-c", "echo 'create window failed: fork failed' >&2; exit 1")
		}
		return exec.CommandContext(ctx, name, args...)
	}))
	if err := failing.NewSession(ctx, spec("ace-agent-2")); err == nil {
		t.Fatal("the failing tmux started a session")
	}
	testkit.WaitFor(t, "the first agent's launcher to take its env file", 10*time.Second, func() bool {
		files, _ := filepath.Glob(filepath.Join(run, "env-*"))
		return len(files) == 0
	})
}

// TestGoneTellsASessionThatWentFromAFailedCommand: a capture of a session that is not there, or on a socket with
// no server, says the session is gone; a command tmux refuses for another reason does not.
func TestGoneTellsASessionThatWentFromAFailedCommand(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	ctx := context.Background()
	if _, err := c.Capture(ctx, "ace-nope", 0); !tmuxops.Gone(err) {
		t.Errorf("no server: %v is not gone", err)
	}
	if err := c.NewSession(ctx, tmuxops.SessionSpec{Name: "ace-agent-1", Dir: t.TempDir(), Argv: []string{"sleep", "600"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Capture(ctx, "ace-nope", 0); !tmuxops.Gone(err) {
		t.Errorf("no such session: %v is not gone", err)
	}
	if _, err := c.Capture(ctx, "ace-agent-1", 0); err != nil || tmuxops.Gone(err) {
		t.Errorf("a capture of a live session: %v", err)
	}
	out, err := exec.Command("tmux", "-L", c.Socket(), "no-such-command").CombinedOutput()
	if err == nil || tmuxops.Gone(&tmuxops.Error{Args: []string{"no-such-command"}, ExitCode: 1, Stderr: string(out)}) {
		t.Errorf("tmux refusing a command (%s) is taken for a session gone", out)
	}
}
