package testkit

import (
	"os/exec"
	"syscall"
	"testing"
)

// LoadCPU keeps the machine busy beside the test: n busy loops, each in a session of its own as the tmux servers
// of a test run are (the scheduler shares the CPU between sessions first), ended by PID when t ends. A case that
// depends on the machine being idle shows here, not in CI.
func LoadCPU(t testing.TB, n int) {
	t.Helper()
	for range n {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			t.Fatalf("start a busy loop: %v", err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
}
