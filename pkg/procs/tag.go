package procs

import (
	"os"
	"strconv"
	"strings"
)

// Tag names this process across PID reuse, "<pid>.<start>", for files it writes and a later process may find
// abandoned (TagGone).
func Tag() string {
	st, _ := Read(os.Getpid())
	return strconv.Itoa(os.Getpid()) + "." + strconv.FormatUint(st.Start, 10)
}

// TagGone reports whether the process a Tag names has ended (its PID gone, or now another process's). A string
// that is no tag is not known to be gone.
func TagGone(tag string) bool {
	pid, start, ok := strings.Cut(tag, ".")
	p, err1 := strconv.Atoi(pid)
	s, err2 := strconv.ParseUint(start, 10, 64)
	if !ok || err1 != nil || err2 != nil || p <= 0 {
		return false
	}
	st, err := Read(p)
	return err != nil || st.Start != s || st.State == 'Z' || st.State == 'X'
}
