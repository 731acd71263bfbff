package sandbox_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/aceworks/ace/pkg/sandbox"
	"github.com/aceworks/ace/pkg/tmuxops"
)

// tuiMain is a small interactive program as an agent CLI is one: it opens /dev/tty, checks that it is the
// terminal's foreground and has TERM (the pane's), reads keys in raw mode, and redraws its size on SIGWINCH.
func tuiMain() int {
	tty := "ok"
	if f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0); err != nil {
		tty = err.Error()
	} else {
		f.Close()
	}
	fg, err := unix.IoctlGetInt(0, unix.TIOCGPGRP)
	foreground := err == nil && fg == syscall.Getpgrp()
	if os.Getenv("TERM") == "" {
		tty += " (no TERM)"
	}
	canary := "absent"
	pid1, _ := os.ReadFile("/proc/1/environ")
	if os.Getenv("ACE_HOST_CANARY") != "" || strings.Contains(string(pid1), envCanary) {
		canary = "PRESENT"
	}
	old, err := term.MakeRaw(0)
	if err != nil {
		fmt.Println("raw:", err)
		return 1
	}
	defer term.Restore(0, old)
	size := func() string { w, h, _ := term.GetSize(0); return fmt.Sprintf("%dx%d", w, h) }
	fmt.Printf("tui ready %s fg=%v tty=%s canary=%s\r\n", size(), foreground, tty, canary)
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	keys := make(chan byte)
	go func() {
		r := bufio.NewReader(os.Stdin)
		for {
			b, err := r.ReadByte()
			if err != nil {
				close(keys)
				return
			}
			keys <- b
		}
	}()
	var line []byte
	for {
		select {
		case <-winch:
			fmt.Printf("winch %s\r\n", size())
		case b, ok := <-keys:
			switch {
			case !ok:
				return 1
			case b == 3:
				fmt.Print("key ^C\r\n")
			case b == '\r' && string(line) == "quit":
				return 0
			case b == '\r':
				fmt.Printf("got: %s\r\n", line)
				line = line[:0]
			default:
				line = append(line, b)
			}
		}
	}
}

// TestTUIInTmux runs the interactive program boxed in a real tmux pane (private socket), the way the tmux runner
// starts agents: tmux → ace __box-launch (env file) → bwrap → ace __box → program.
func TestTUIInTmux(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	h := host(t)
	t.Setenv("ACE_HOST_CANARY", envCanary) // the tmux server inherits it; the box must not
	d := dirs(t, "wc", "home", "run")
	box, err := h.Wrap(sandbox.Spec{WorkDir: d[0], Home: d[1], Self: self(t), Terminal: true,
		Env: map[string]string{"ANTHROPIC_API_KEY": agentSecret}}, []string{sandbox.SelfPath, "tui"})
	if err != nil {
		t.Fatal(err)
	}
	socket := fmt.Sprintf("ace-box-test-%d", os.Getpid())
	c, ctx := boxedSession(t, socket, box, d[0], filepath.Join(d[2], "env"))
	await := func(want string) {
		t.Helper()
		var last string
		for {
			screen, err := c.Capture(ctx, "box", 0)
			if err == nil && strings.Contains(screen, want) {
				return
			}
			if err == nil {
				last = screen
			}
			if ctx.Err() != nil {
				t.Fatalf("waiting for %q; screen:\n%s", want, last)
			}
			time.Sleep(50 * time.Millisecond) // a screen has no change event to wait on
		}
	}
	await("tui ready 100x30 fg=true tty=ok canary=absent")
	if err := c.SendKeys(ctx, "box", "hello", "Enter"); err != nil {
		t.Fatal(err)
	}
	await("got: hello")
	if err := c.SendKeys(ctx, "box", "C-c"); err != nil {
		t.Fatal(err)
	}
	await("key ^C")
	if out, err := exec.CommandContext(ctx, "tmux", "-L", socket, "resize-window", "-t", "box", "-x", "120", "-y", "40").CombinedOutput(); err != nil {
		t.Fatalf("resize: %v: %s", err, out)
	}
	await("winch 120x40")
	if err := c.SendKeys(ctx, "box", "quit", "Enter"); err != nil {
		t.Fatal(err)
	}
	var panes []tmuxops.Pane
	for {
		if ctx.Err() != nil {
			t.Fatalf("the pane did not end: %+v", panes)
		}
		panes, err = c.Panes(ctx)
		if err != nil && ctx.Err() == nil {
			t.Fatal(err)
		}
		// tmux 3.3 may mark a pane dead at the end of its output and never reap it (tmuxops.ExitUnknown).
		if len(panes) == 1 && panes[0].Dead {
			if st := panes[0].ExitStatus; st != 0 && st != tmuxops.ExitUnknown {
				t.Fatalf("the boxed program exited %d", st)
			}
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if ents, _ := os.ReadDir(filepath.Join(d[2], "env")); len(ents) != 0 {
		t.Errorf("the env file was left behind: %v", ents)
	}
}

// gracefulMain waits for SIGTERM, then takes a moment to leave a mark in its working directory and exits 0: an
// agent saving its session on the way out.
func gracefulMain() int {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	fmt.Print("waiting for SIGTERM\r\n")
	<-term
	time.Sleep(300 * time.Millisecond) // saving a session takes a moment: the box must live through it
	if err := os.WriteFile("saved", []byte("session saved"), 0o644); err != nil {
		return 1
	}
	return 0
}

// TestStopInTmux: ending a boxed pane the way ace ends a session (SIGTERM to every process of the pane, SIGKILL
// after a grace) lets the agent finish its SIGTERM handler; bwrap, which would take the box down at once,
// ignores it.
func TestStopInTmux(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	h := host(t)
	d := dirs(t, "wc", "home", "run")
	box, err := h.Wrap(sandbox.Spec{WorkDir: d[0], Home: d[1], Self: self(t), Terminal: true,
		Env: map[string]string{"TERM": "tmux-256color"}}, []string{sandbox.SelfPath, "graceful"})
	if err != nil {
		t.Fatal(err)
	}
	c, ctx := boxedSession(t, fmt.Sprintf("ace-box-stop-%d", os.Getpid()), box, d[0], filepath.Join(d[2], "env"))
	for {
		if screen, _ := c.Capture(ctx, "box", 0); strings.Contains(screen, "waiting for SIGTERM") {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the boxed program did not start")
		}
		time.Sleep(50 * time.Millisecond) // a screen has no change event to wait on
	}
	if err := c.Kill(ctx, "box"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(d[0], "saved")); err != nil || string(b) != "session saved" {
		t.Fatalf("the agent was killed before its SIGTERM handler ran: %q %v", b, err)
	}
}

// boxedSession starts box in session "box" of a tmux server of its own on socket, as the tmux runner does (ace's
// box launcher in front, the env file in runtime), ended by PID at the test's end; ctx bounds the test's steps.
func boxedSession(t *testing.T, socket string, box *sandbox.Box, dir, runtime string) (*tmuxops.Client, context.Context) {
	t.Helper()
	c := tmuxops.New(socket)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.KillServer(ctx); err != nil {
			t.Errorf("kill tmux server: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	err := c.NewSession(ctx, tmuxops.SessionSpec{Name: "box", Dir: dir, Argv: box.Argv, Secrets: box.Env,
		Launcher: []string{self(t), sandbox.LaunchArg}, RuntimeDir: runtime, Width: 100, Height: 30})
	if err != nil {
		t.Fatal(err)
	}
	return c, ctx
}
