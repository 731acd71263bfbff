package sandbox

import (
	"os/exec"
	"runtime"
)

// startRecorded starts cmd under the recorder's filter and serves the filter's notifications. The filter is
// installed on a thread of this process locked to one goroutine, which starts cmd from it — a child inherits
// the filters of the thread that forks it — and then ends, and the thread with it (a goroutine that ends locked
// takes its thread along). No other goroutine ever runs on that thread, and the runtime makes new threads from
// a clean one (its template thread) while a thread is locked, so ace __box's own calls never wait on its own
// notifier; one the filtered thread makes before it ends (os/exec's, forking) is answered by the notifier on
// another. No second program starts: the agent's start costs only its notified calls.
//
// Where the filter cannot be installed, cmd starts unfiltered and the recorder notes why.
func startRecorded(cmd *exec.Cmd, pol policy, rec *recorder) error {
	errc := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: see above
		listener, err := installFilter()
		if err != nil {
			rec.note(err.Error())
		} else {
			// Serving before the child starts: its first call (the dynamic loader's) waits for an answer.
			go newNotifier(listener, pol, rec).serve()
		}
		errc <- cmd.Start()
	}()
	return <-errc
}
