package headless

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/aceworks/ace/pkg/procs"
	"github.com/aceworks/ace/pkg/tmuxops"
)

// Proc names a process so that it can be found again by another ace process: a PID alone may have been reused
// by the time ace restarts, so the kernel's start time of the process goes with it.
type Proc struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start"` // /proc/<pid>/stat starttime, 0 when unknown
}

// String is "pid/start", the form persisted in run variables.
func (p Proc) String() string { return strconv.Itoa(p.PID) + "/" + strconv.FormatUint(p.Start, 10) }

// ParseProc reads what String wrote; the zero Proc for anything else.
func ParseProc(s string) Proc {
	pid, start, _ := strings.Cut(s, "/")
	p, err := strconv.Atoi(pid)
	if err != nil || p <= 0 {
		return Proc{}
	}
	st, _ := strconv.ParseUint(start, 10, 64)
	return Proc{PID: p, Start: st}
}

// Alive reports whether the process still runs: it exists, is not a zombie, and started when it did.
func (p Proc) Alive() bool {
	if p.PID <= 0 {
		return false
	}
	st, err := procs.Read(p.PID)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false
		}
		// No /proc (not Linux): signal 0 is the best left.
		return syscall.Kill(p.PID, 0) == nil
	}
	if st.State == 'Z' || st.State == 'X' {
		return false
	}
	return p.Start == 0 || st.Start == p.Start
}

// Signal sends sig to the process group the process leads, if it is still the same process. A zombie leader
// still counts: the rest of its group (or its other threads, while they exit) may be running.
func (p Proc) Signal(sig syscall.Signal) error {
	if p.PID <= 0 {
		return nil
	}
	if st, err := procs.Read(p.PID); err != nil || p.Start != 0 && st.Start != p.Start {
		return nil // gone, or the PID now belongs to another process
	}
	if err := syscall.Kill(-p.PID, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal process group %d: %w", p.PID, err)
	}
	return nil
}

// ProcOf names a running process by its PID (start time read from /proc).
func ProcOf(pid int) Proc {
	st, _ := procs.Read(pid)
	return Proc{PID: pid, Start: st.Start}
}

// Start launches the supervisor for spec, detached from ace: a session and process group of its own, stdin
// from /dev/null and its output appended to debugLog, so that it outlives the ace process that started it and
// a later one can find it (Running on lockPath, its Proc in the status). supervisor is the argv prefix of
// `ace __headless`; the spec goes through a 0600 file in runtimeDir that the supervisor reads and deletes.
func Start(supervisor []string, spec Spec, runtimeDir, debugLog, lockPath string) (Proc, error) {
	if len(supervisor) == 0 {
		return Proc{}, errors.New("headless: no supervisor command")
	}
	if err := os.MkdirAll(runtimeDir, 0o700); err != nil {
		return Proc{}, err
	}
	if err := os.MkdirAll(filepath.Dir(lockPath), 0o700); err != nil {
		return Proc{}, err
	}
	lock, held, err := tryLock(lockPath)
	if err != nil {
		return Proc{}, err
	}
	if held {
		return Proc{}, ErrRunning
	}
	// The supervisor has its own copy of the locked file; this one goes whatever happens.
	defer lock.Close()
	b, err := json.Marshal(spec)
	if err != nil {
		return Proc{}, err
	}
	// Named for its writer: a spec no supervisor read is swept once this process is gone (tmuxops.SweepRuntime).
	f, err := os.CreateTemp(runtimeDir, tmuxops.RuntimeName("headless", ".json"))
	if err != nil {
		return Proc{}, fmt.Errorf("write headless spec: %w", err)
	}
	_, werr := f.Write(b)
	if err := errors.Join(werr, f.Close()); err != nil {
		os.Remove(f.Name())
		return Proc{}, fmt.Errorf("write headless spec: %w", err)
	}
	logf, err := os.OpenFile(debugLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		os.Remove(f.Name())
		return Proc{}, fmt.Errorf("open debug log: %w", err)
	}
	defer logf.Close()
	// Not CommandContext: the supervisor must outlive ctx and this process.
	cmd := exec.Command(supervisor[0], append(append([]string{}, supervisor[1:]...), f.Name())...)
	cmd.Dir = spec.Dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{lock} // fd 3: lockFD
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		os.Remove(f.Name())
		return Proc{}, fmt.Errorf("start the headless supervisor: %w", err)
	}
	p := ProcOf(cmd.Process.Pid)
	// Reap it when it ends while this process still runs; Alive tells a zombie from a live one meanwhile.
	go func() { _ = cmd.Wait() }()
	return p, nil
}
