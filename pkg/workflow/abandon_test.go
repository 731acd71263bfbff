package workflow

import (
	"log/slog"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/headless"
	"github.com/aceworks/ace/pkg/store"
)

// TestAbandonedTurnIsStopped: a supervisor this step started for a run that another process ended meanwhile
// is stopped; one the store already knows (the other process handles it) is left alone.
func TestAbandonedTurnIsStopped(t *testing.T) {
	t.Parallel()
	start := func() *exec.Cmd {
		cmd := exec.Command("sleep", "600")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // a group leader, as a supervisor is
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	e := withParts(&Engine{log: slog.New(slog.DiscardHandler)})
	exited := func(cmd *exec.Cmd) bool {
		done := make(chan struct{})
		go func() { _, _ = cmd.Process.Wait(); close(done) }()
		select {
		case <-done:
			return true
		case <-time.After(5 * time.Second):
			return false
		}
	}

	orphan := start()
	proc := headless.ProcOf(orphan.Process.Pid).String()
	mine := &store.Run{Runner: "exec", State: store.RunState{ExecState: store.ExecState{ExecProc: proc}}}
	e.exec.Abandon(mine, &store.Run{Runner: "exec", Status: store.StatusCancelled})
	if !exited(orphan) {
		t.Fatal("the abandoned supervisor still runs")
	}

	known := start()
	proc = headless.ProcOf(known.Process.Pid).String()
	mine = &store.Run{Runner: "exec", State: store.RunState{ExecState: store.ExecState{ExecProc: proc}}}
	e.exec.Abandon(mine, &store.Run{Runner: "exec", Status: store.StatusCancelled, State: store.RunState{ExecState: store.ExecState{ExecProc: proc}}})
	e.exec.Abandon(mine, &store.Run{Runner: "exec", Status: store.StatusActive})
	if err := known.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("a supervisor the store knows was stopped: %v", err)
	}
}
