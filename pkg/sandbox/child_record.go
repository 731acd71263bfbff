package sandbox

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// recording is the recorder's part in ace __box: the agent started under the recorder's filter, the last report
// sent once it has ended. A nil *recording records nothing: the agent is ace __box's child as it was.
type recording struct {
	rec   *recorder
	pol   policy
	probe bool
}

// newRecording is the recording of a box that reports to the report socket, or of the doctor's probe (which
// reports nothing and says whether recording works); nil where neither.
func newRecording(reports string, probe bool, pol policy) *recording {
	if reports == "" && !probe {
		return nil
	}
	r := &recording{rec: newRecorder(reports), pol: pol, probe: probe}
	go r.rec.run()
	// Orphans of the agent come to this process rather than to bwrap's reaper: where Yama's ptrace_scope is 1
	// (Ubuntu's default) a process may read the memory of its descendants only, and the notifier reads theirs.
	if err := becomeSubreaper(); err != nil {
		r.rec.note(fmt.Sprintf("the box cannot adopt the agent's orphans (%v): where Yama restricts ptrace, their file attempts go unrecorded", err))
	}
	return r
}

// start starts the agent, recorded.
func (r *recording) start(cmd *exec.Cmd) error {
	if r == nil {
		return cmd.Start()
	}
	return startRecorded(cmd, r.pol, r.rec)
}

// wait returns the agent's exit code once it has ended; recorded, it reaps the orphans that came here meanwhile.
func (r *recording) wait(cmd *exec.Cmd) int {
	if r == nil {
		return exitCode(cmd.Wait())
	}
	return reap(cmd.Process.Pid)
}

// end sends what the last moments saw, not waiting long for a report socket that does not answer (its ace is
// away), and returns ace __box's exit code: the agent's, or the probe's answer.
func (r *recording) end(code int) int {
	switch {
	case r == nil:
	case r.probe:
		return probeResult(r.rec, code)
	default:
		r.rec.flush(time.Now().Add(2 * time.Second))
	}
	return code
}

// probeResult is the doctor's answer, printed: whether the command's calls reached the recorder.
func probeResult(rec *recorder, code int) int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	switch {
	case len(rec.notes) > 0:
		fmt.Println(strings.Join(rec.notes, "; "))
		return 1
	case rec.notified == 0:
		fmt.Printf("the recorder saw no system call of the command (it exited %d)\n", code)
		return 1
	}
	fmt.Printf("the recorder saw %d system calls\n", rec.notified)
	return 0
}

// reap waits for the child pid and returns its exit code (128+N for a signal N), reaping on the way the orphans
// that came to this process as a subreaper.
func reap(pid int) int {
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, 0, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return 126
		case got != pid:
			continue
		case ws.Signaled():
			return 128 + int(ws.Signal())
		}
		return ws.ExitStatus()
	}
}
