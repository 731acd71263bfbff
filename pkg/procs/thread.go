package procs

import (
	"os/exec"
	"runtime"
)

// StartOnOwnThread starts cmd from an OS thread of its own and reaps it there; the channel is closed once cmd
// has exited (and its output copied, as exec.Cmd.Wait does).
//
// Linux sends a child its parent-death signal (SysProcAttr.Pdeathsig) when the thread that forked it ends, not
// the process, and Go ends a thread when a goroutine locked to it returns — as this one does, on whatever thread
// it was given. A child forked from an ordinary goroutine got that signal whenever some other locked goroutine
// happened to end on the thread that had forked it (a test's PostgreSQL shut down mid-test); forked from a thread
// locked for the child's whole life, it gets it only when this process dies.
func StartOnOwnThread(cmd *exec.Cmd) (<-chan struct{}, error) {
	started := make(chan error)
	exited := make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine, after the child
		defer close(exited)
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = cmd.Wait()
	}()
	return exited, <-started
}
