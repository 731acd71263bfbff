package headless

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// ErrRunning is returned by Start when a supervisor still holds the turn lock.
var ErrRunning = errors.New("a headless supervisor is still running for this run")

// The turn lock tells, without trusting any PID, whether a supervisor is running: Start takes an exclusive flock
// on the run's lock file before it starts the supervisor and hands the locked file to it, so the lock is held
// from before the supervisor exists until it exits, however it exits (SIGKILL included). An ace process killed
// between starting a supervisor and saving its PID therefore still finds it, and never starts a second one.

// lockFD is where the supervisor receives the locked file (the first of exec.Cmd.ExtraFiles).
const lockFD = 3

// tryLock opens path and takes the lock; held is true (and f nil) when someone else has it.
func tryLock(path string) (f *os.File, held bool, err error) {
	f, err = os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, false, fmt.Errorf("open turn lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, true, nil
		}
		return nil, false, fmt.Errorf("turn lock: %w", err)
	}
	return f, false, nil
}

// Running reports whether a supervisor holds the lock at path. No lock file means none ever ran.
func Running(path string) (bool, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	f, held, err := tryLock(path)
	if err != nil || held {
		return held, err
	}
	return false, f.Close()
}
