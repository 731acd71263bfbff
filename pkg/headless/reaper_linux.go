package headless

import "golang.org/x/sys/unix"

// becomeSubreaper makes the supervisor the parent of every process its agent leaves behind (codex leaves an
// app-server daemon running in a session of its own): orphans come to it instead of init, so it can find and end
// them all when the turn is over, whatever group or session they moved to.
func becomeSubreaper() error { return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) }
