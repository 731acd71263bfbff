package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// recording is the recorder's part in ace __box: the agent started through the exec shim, the notifier served
// once it has started, the last report sent once it has ended. A nil *recording records nothing: the agent is
// ace __box's child as it was.
type recording struct {
	rec          *recorder
	pol          policy
	probe        bool
	ours, theirs *os.File
}

// agentCommand is path run as argv: through the exec shim, recorded, when reports names the report socket or
// probe is set (ace doctor's check, which reports nothing and says whether recording works).
func agentCommand(path string, argv []string, reports string, probe bool, pol policy) (*exec.Cmd, *recording, error) {
	if reports == "" && !probe {
		cmd := exec.Command(path, argv[1:]...)
		cmd.Args[0] = argv[0]
		return cmd, nil, nil
	}
	r := &recording{rec: newRecorder(reports), pol: pol, probe: probe}
	cmd, ours, err := recordedCommand(SelfPath, path, argv)
	if err != nil {
		return nil, nil, err
	}
	r.ours, r.theirs = ours, cmd.ExtraFiles[0]
	go r.rec.run()
	// Orphans of the agent come to this process rather than to bwrap's reaper: where Yama's ptrace_scope is 1
	// (Ubuntu's default) a process may read the memory of its descendants only, and the notifier reads theirs.
	if err := becomeSubreaper(); err != nil {
		r.rec.note(fmt.Sprintf("the box cannot adopt the agent's orphans (%v): where Yama restricts ptrace, their file attempts go unrecorded", err))
	}
	return cmd, r, nil
}

// started serves the notifier once the shim has started.
func (r *recording) started() {
	if r != nil {
		startNotifier(r.ours, r.theirs, r.pol, r.rec)
	}
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
