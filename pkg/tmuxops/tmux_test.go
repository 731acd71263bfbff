package tmuxops_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/testkit"
	"github.com/aceworks/ace/pkg/fakeagent"
	"github.com/aceworks/ace/pkg/procs"
	"github.com/aceworks/ace/pkg/tmuxops"
)

// TestMain lets the test binary play what the tests start: the launcher, the fake agent and a second process
// holding a control connection (monitor).
func TestMain(m *testing.M) {
	os.Exit(testkit.Main(m, nil, testkit.Commands(map[string]func([]string) int{
		"__launch":   tmuxops.LaunchMain,
		"fakeagent":  fakeagent.Main,
		"monitor":    func(args []string) int { return monitorMain(args[0]) },
		"oldmonitor": func(args []string) int { return oldMonitorMain(args[0], strings.Join(args[1:], "")) },
	})))
}

// sockets numbers the tests' tmux sockets: tests run in parallel, each on a server of its own.
var sockets atomic.Int64

// socketName is a tmux socket no other test of any process uses.
func socketName(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), sockets.Add(1))
}

// removeDirsLast has t's temporary directories removed after every cleanup registered from here on: t.TempDir
// registers their removal at its first call, and cleanups run last in, first out. A cleanup that ends a tmux
// server, registered after this, runs before the removal: no agent still writes in a directory being removed.
func removeDirsLast(t *testing.T) {
	t.Helper()
	_ = t.TempDir()
}

// newClient starts nothing: the server appears with the first session and is killed by PID at cleanup, before
// the test's directories (its agents') are removed.
func newClient(t *testing.T) *tmuxops.Client {
	t.Helper()
	c := tmuxops.New(socketName("ace-test"))
	removeDirsLast(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.KillServer(ctx); err != nil {
			t.Errorf("kill tmux server: %v", err)
		}
	})
	return c
}

type agentOpts struct {
	script  string
	flags   []string
	secrets map[string]string
}

// startAgent runs the fake agent in a session and returns the session name, work dir and record file.
func startAgent(t *testing.T, c *tmuxops.Client, name string, o agentOpts) (dir, record string) {
	t.Helper()
	dir = t.TempDir()
	record = filepath.Join(dir, "record.jsonl")
	argv := []string{os.Args[0], "fakeagent", "--record", record}
	if o.script != "" {
		sp := filepath.Join(dir, "script.txt")
		if err := os.WriteFile(sp, []byte(o.script), 0o644); err != nil {
			t.Fatal(err)
		}
		argv = append(argv, "--script", sp)
	}
	argv = append(argv, o.flags...)
	spec := tmuxops.SessionSpec{Name: name, Dir: dir, Argv: argv, Width: 120, Height: 40,
		Env: map[string]string{"PLAIN": "visible"}, Secrets: o.secrets,
		Launcher: []string{os.Args[0], "__launch"}, RuntimeDir: filepath.Join(dir, "run"),
		LogPath: filepath.Join(dir, "session.log")}
	if err := c.NewSession(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	return dir, record
}

func ready(s string) bool { return strings.Contains(s, "? for shortcuts") }

func deliverOpts() tmuxops.DeliverOptions {
	return tmuxops.DeliverOptions{Ready: ready, ReadyTimeout: 20 * time.Second, EnterCount: 1,
		EnterDelay: 100 * time.Millisecond, SubmitRetries: 3, Poll: 50 * time.Millisecond}
}

func records(t *testing.T, path string) []string {
	t.Helper()
	b, _ := os.ReadFile(path)
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l == "" {
			continue
		}
		var r struct{ Prompt string }
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r.Prompt)
	}
	return out
}

func TestLongPromptArrivesByteExactOnceDespiteSplashAndSwallowedEnter(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	_, record := startAgent(t, c, "ace-paste-1", agentOpts{flags: []string{"--splash", "700ms", "--swallow-enters", "1"}})
	var b strings.Builder
	for b.Len() < 64<<10 {
		b.WriteString("/start \"quotes\" 'single' $(whoami) `ticks` \\back\\slash\ttab — ünïcödé ✓ $HOME ${USER}\n")
	}
	prompt := strings.TrimRight(b.String(), "\n")
	if err := c.Deliver(context.Background(), "ace-paste-1", prompt, deliverOpts()); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the prompt to be recorded", 20*time.Second, func() bool { return len(records(t, record)) >= 1 })
	time.Sleep(300 * time.Millisecond)
	got := records(t, record)
	if len(got) != 1 {
		t.Fatalf("agent received %d prompts, want exactly 1", len(got))
	}
	if got[0] != prompt {
		t.Fatalf("prompt differs: got %d bytes, want %d", len(got[0]), len(prompt))
	}
}

// TestADroppedPasteGetsNoEnter: an agent that drops a paste (here during its splash, which the Ready check
// below ignores) gets no Enter — it would be a newline, or an empty submit — and Deliver says the paste was not
// shown; pasted again once the agent takes input, the prompt arrives once.
func TestADroppedPasteGetsNoEnter(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	_, record := startAgent(t, c, "ace-drop-1", agentOpts{flags: []string{"--splash", "1500ms"}})
	prompt := "Read the task file and do what it says."
	shown := func(s string) bool { return strings.Contains(s, "Read the task file") }
	o := deliverOpts()
	o.Ready, o.Shown, o.PasteTimeout = func(string) bool { return true }, shown, 300*time.Millisecond
	err := c.Deliver(context.Background(), "ace-drop-1", prompt, o)
	var lost *tmuxops.PasteNotShownError
	if !errors.As(err, &lost) || !errors.Is(err, tmuxops.ErrPasteNotShown) {
		t.Fatalf("a paste dropped during the splash: %v", err)
	}
	o = deliverOpts()
	o.Shown = shown
	if err := c.Deliver(context.Background(), "ace-drop-1", prompt, o); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the prompt to be recorded", 20*time.Second, func() bool { return len(records(t, record)) >= 1 })
	if got := records(t, record); len(got) != 1 || got[0] != prompt {
		t.Fatalf("prompts %q, want the prompt once", got)
	}
}

func TestSecretsReachTheAgentButNoCommandLine(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	secret := "s3cr3t-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	dir, _ := startAgent(t, c, "ace-secret-1", agentOpts{
		script:  "sh printf '%s|%s' \"$ACE_SECRET\" \"$PLAIN\" > env.out\nidle\n",
		secrets: map[string]string{"ACE_SECRET": secret},
	})
	if err := c.Deliver(context.Background(), "ace-secret-1", "go", deliverOpts()); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "env.out")
	testkit.WaitFor(t, "the agent to write env.out", 20*time.Second, func() bool { _, err := os.Stat(out); return err == nil })
	if b, _ := os.ReadFile(out); string(b) != secret+"|visible" {
		t.Fatalf("agent environment: %q", b)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), secret) {
			t.Errorf("secret found in %s: %q", p, strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "run", "*")); len(left) != 0 {
		t.Errorf("env files left behind: %v", left)
	}
}

func TestExactTargetsDeadPanesAndKillingDaemons(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	ctx := context.Background()
	dir12, _ := startAgent(t, c, "ace-x-12", agentOpts{script: "sh sleep 1000 & echo $! > daemon.pid\nidle\n"})
	if ok, _ := c.HasSession(ctx, "ace-x-1"); ok {
		t.Fatal("ace-x-1 matched ace-x-12")
	}
	startAgent(t, c, "ace-x-1", agentOpts{script: "crash 3\n"})
	if err := c.Deliver(ctx, "ace-x-1", "crash now", deliverOpts()); err != nil && !strings.Contains(err.Error(), "can't find") {
		// The agent may die before submission is verified; the pane state below is what matters.
		t.Logf("deliver: %v", err)
	}
	testkit.WaitFor(t, "ace-x-1 to die", 20*time.Second, func() bool {
		panes, err := c.Panes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range panes {
			if p.Session == "ace-x-1" {
				// tmux may leave the pane's process unreaped (see TestExitStatusOfDeadPanes): unknown, not 0.
				return p.Dead && (p.ExitStatus == 3 || p.ExitStatus == tmuxops.ExitUnknown)
			}
		}
		return false
	})
	if err := c.Deliver(ctx, "ace-x-12", "start a daemon", deliverOpts()); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(dir12, "daemon.pid")
	testkit.WaitFor(t, "the daemon pid", 20*time.Second, func() bool { b, _ := os.ReadFile(pidFile); return len(strings.TrimSpace(string(b))) > 0 })
	b, _ := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if err := c.Kill(ctx, "ace-x-12"); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the daemon to die", 20*time.Second, func() bool {
		err := syscall.Kill(pid, 0)
		st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		return errors.Is(err, syscall.ESRCH) || strings.Contains(string(st), ") Z ")
	})
	if ok, _ := c.HasSession(ctx, "ace-x-12"); ok {
		t.Fatal("session survived Kill")
	}
	if ok, _ := c.HasSession(ctx, "ace-x-1"); !ok {
		t.Fatal("killing ace-x-12 took ace-x-1 with it")
	}
	if b, _ := os.ReadFile(filepath.Join(dir12, "session.log")); !strings.Contains(string(b), "fake-agent") {
		t.Errorf("transcript lacks the agent's banner: %q", b)
	}
}

func TestErrorsCarryExitCodeAndStderr(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	startAgent(t, c, "ace-err-1", agentOpts{})
	err := c.SendKeys(context.Background(), "ace-no-such-session", "Enter")
	var te *tmuxops.Error
	if !errors.As(err, &te) || te.ExitCode == 0 || !strings.Contains(te.Stderr, "can't find") {
		t.Fatalf("err = %#v", err)
	}
}

func TestSessionNames(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"acme/widgets": "ace-widgets-7",
		"acme/api.v2":  "", // sanitized: gets a hash
	}
	for repo, want := range cases {
		got := tmuxops.SessionName(repo, 7)
		if want != "" && got != want {
			t.Errorf("SessionName(%q) = %q, want %q", repo, got, want)
		}
		if strings.ContainsAny(got, ".:") {
			t.Errorf("SessionName(%q) = %q contains characters tmux rejects", repo, got)
		}
	}
	if tmuxops.SessionName("a/api.v2", 1) == tmuxops.SessionName("a/api_v2", 1) {
		t.Error("sanitizing made two repositories share a session name")
	}
	if long := tmuxops.SessionName("o/"+strings.Repeat("x", 200), 1); len(long) > 80 {
		t.Errorf("name not bounded: %d chars", len(long))
	}
}

// TestTranscriptIsWrittenAsItComes: a line the agent printed is in the transcript while the agent still runs,
// not held back in a buffer until 4 KiB more arrive or the pane ends; and its very first bytes are there too
// (the pipe is set up in the same tmux call that starts the agent).
func TestTranscriptIsWrittenAsItComes(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "session.log")
	spec := tmuxops.SessionSpec{Name: "ace-transcript-1", Dir: dir, Width: 80, Height: 20, LogPath: log,
		Argv: []string{"sh", "-c", "echo first-line-of-output; exec sleep 600"}}
	if err := c.NewSession(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the line in the transcript", 20*time.Second, func() bool {
		b, _ := os.ReadFile(log)
		return strings.Contains(string(b), "first-line-of-output")
	})
}

// TestExitStatusOfDeadPanes: a dead pane's status reads as the process's code, a signal as 128+N, and a pane
// tmux has not reaped yet as unknown — never as a clean exit. (tmux 3.3 marks a pane dead before it reaps the
// process, and now and then leaves it a zombie for good: unknown is a right answer here.)
func TestExitStatusOfDeadPanes(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	ctx := context.Background()
	for name, argv := range map[string][]string{
		"ace-exit-3":   {"sh", "-c", "exit 3"},
		"ace-signal-9": {"sh", "-c", "kill -9 $$"},
	} {
		if err := c.NewSession(ctx, tmuxops.SessionSpec{Name: name, Dir: t.TempDir(), Argv: argv}); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]int{"ace-exit-3": 3, "ace-signal-9": 128 + 9}
	testkit.WaitFor(t, "both panes dead with their status", 20*time.Second, func() bool {
		panes, err := c.Panes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, p := range panes {
			if !p.Dead {
				continue
			}
			if p.ExitStatus != want[p.Session] && p.ExitStatus != tmuxops.ExitUnknown {
				t.Fatalf("%s: exit status %d, want %d", p.Session, p.ExitStatus, want[p.Session])
			}
			n++
		}
		return n == 2
	})
}

// TestKillServerRemovesItsSocket: nothing of a killed server is left behind, its socket file included — also
// when the server had already died by a signal, which leaves the socket on disk.
func TestKillServerRemovesItsSocket(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	ctx := context.Background()
	for _, crashFirst := range []bool{false, true} {
		if err := c.NewSession(ctx, tmuxops.SessionSpec{Name: "ace-sock-1", Dir: t.TempDir(), Argv: []string{"sleep", "600"}}); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("tmux", "-L", c.Socket(), "display-message", "-p", "#{socket_path}\t#{pid}").Output()
		if err != nil {
			t.Fatal(err)
		}
		socket, pidText, _ := strings.Cut(strings.TrimSpace(string(out)), "\t")
		if crashFirst {
			pid, _ := strconv.Atoi(pidText)
			if err := c.Kill(ctx, "ace-sock-1"); err != nil { // its sleep must not outlive the test
				t.Fatal(err)
			}
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			testkit.WaitFor(t, "the server to die", 20*time.Second, func() bool { return syscall.Kill(pid, 0) != nil || isZombie(pid) })
			if _, err := os.Stat(socket); err != nil {
				t.Fatalf("a killed server's socket is already gone (%v): the test proves nothing", err)
			}
		}
		if err := c.KillServer(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(socket); !os.IsNotExist(err) {
			t.Fatalf("crashed first %v: socket %s after KillServer: %v", crashFirst, socket, err)
		}
	}
}

func isZombie(pid int) bool {
	st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return strings.Contains(string(st), ") Z ")
}

func TestQualifiedSessionNames(t *testing.T) {
	t.Parallel()
	a, b := tmuxops.QualifiedSessionName("acme/widgets", 7), tmuxops.QualifiedSessionName("other/widgets", 7)
	if a == b || !strings.HasPrefix(a, "ace-widgets_") || !strings.HasSuffix(a, "-7") {
		t.Fatalf("qualified names %q and %q", a, b)
	}
}

// TestPanesWithoutAUTF8Locale: a tmux client started without a UTF-8 locale (cron, a service manager) prints
// control characters in formats as "_": the pane list and the server's PID must be read all the same.
func TestPanesWithoutAUTF8Locale(t *testing.T) {
	t.Setenv("LANG", "C")
	t.Setenv("LC_ALL", "")
	t.Setenv("LC_CTYPE", "")
	c := newClient(t)
	ctx := context.Background()
	if err := c.NewSession(ctx, tmuxops.SessionSpec{Name: "ace-c-locale-1", Dir: t.TempDir(), Argv: []string{"sleep", "600"}}); err != nil {
		t.Fatal(err)
	}
	panes, err := c.Panes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(panes) != 1 || panes[0].Session != "ace-c-locale-1" || panes[0].PID <= 0 || panes[0].Dead {
		t.Fatalf("panes %+v, want the one live session with its PID", panes)
	}
	if err := c.KillServer(ctx); err != nil {
		t.Fatalf("kill the server: %v", err)
	}
	if procs.Alive(panes[0].PID) {
		t.Fatalf("the pane's process %d outlived the server", panes[0].PID)
	}
}

// TestKillSparesTheProcessThatHasADeadPanesPID: tmux names a dead pane by the PID its process had; a process that
// has that PID since (another session's agent, another ace's tmux server) survives the session's Kill. The PID is
// handed out again on purpose (ns_last_pid: root only, and another fork on the machine may take it first).
func TestKillSparesTheProcessThatHasADeadPanesPID(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	ctx := context.Background()
	if err := c.NewSession(ctx, tmuxops.SessionSpec{Name: "ace-dead-1", Dir: t.TempDir(), Argv: []string{"sh", "-c", "exit 3"}}); err != nil {
		t.Fatal(err)
	}
	var pid int
	testkit.WaitFor(t, "the pane to die", 10*time.Second, func() bool {
		panes, _ := c.Panes(ctx)
		for _, p := range panes {
			if p.Session == "ace-dead-1" && p.Dead && p.PID > 0 && !procs.Alive(p.PID) {
				pid = p.PID
				return true
			}
		}
		return false
	})
	other := takePID(t, pid)
	if err := c.Kill(ctx, "ace-dead-1"); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.HasSession(ctx, "ace-dead-1"); err != nil || ok {
		t.Errorf("the session is still there (%v)", err)
	}
	if !procs.Alive(other.Process.Pid) {
		t.Errorf("Kill ended process %d, which has the dead pane's PID since", pid)
	}
}

// takePID starts a process of the test's with pid, or skips.
func takePID(t *testing.T, pid int) *exec.Cmd {
	t.Helper()
	for range 50 {
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(pid-1)), 0); err != nil {
			t.Skipf("cannot hand a PID out again here: %v", err)
		}
		cmd := exec.Command("sleep", "600")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if cmd.Process.Pid == pid {
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			return cmd
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	t.Skipf("PID %d was taken by another process each time", pid)
	return nil
}
