package sandbox_test

import (
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/aceworks/ace/pkg/sandbox"
	"github.com/aceworks/ace/pkg/sandbox/sandboxtest"
)

// TestMain lets the test binary be ace inside and outside the box (__box, __box-launch), the scripted hostile
// agent, the interactive program of the tmux test, and a host process the box must not see.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case sandbox.ChildArg:
			os.Exit(sandbox.BoxMain(os.Args[2:]))
		case sandbox.LaunchArg:
			os.Exit(sandbox.LaunchMain(os.Args[2:]))
		case "hostile":
			os.Exit(hostileMain(os.Args[2:]))
		case "tui":
			os.Exit(tuiMain())
		case "graceful":
			os.Exit(gracefulMain())
		case "fetch":
			os.Exit(fetchMain(os.Args[2:]))
		case "exit":
			os.Exit(exitMain(os.Args[2:]))
		case "open-high-bit":
			// open(2) with a flag bit it does not know, which it ignores: still a write.
			fd, err := unix.Open(os.Args[2], unix.O_WRONLY|unix.O_CREAT|1<<31, 0o644)
			if err == nil {
				unix.Close(fd)
			}
			os.Exit(0)
		case "dial":
			// Each "network address" pair in turn, as a program in the box would connect; failures are expected.
			for i := 2; i+1 < len(os.Args); i += 2 {
				if c, err := net.DialTimeout(os.Args[i], os.Args[i+1], 200*time.Millisecond); err == nil {
					c.Close()
				}
			}
			os.Exit(0)
		case "canary-sleeper":
			// Blocks until its stdin closes: a host process whose command line the box must not list.
			var b [1]byte
			os.Stdin.Read(b[:])
			os.Exit(0)
		}
	}
	os.Exit(m.Run())
}

// host is bubblewrap here, or the test is skipped.
func host(t *testing.T) *sandbox.Host { return sandboxtest.Host(t) }

func self(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// startCanary starts a host process with a recognisable command line, ended by PID at cleanup.
func startCanary(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(self(t), "canary-sleeper")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd
}
