// Package procs reads the Linux process table in /proc: a process's state, parent and start time, and the tree
// of processes below one. ace ends agents and whatever they left behind by PID, never by name.
package procs

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Stat is what ace needs of /proc/<pid>/stat.
type Stat struct {
	State byte   // R, S, D, Z (zombie), X (dead), …
	PPID  int    // parent
	Start uint64 // start time in clock ticks since boot: with the PID, it names a process across PID reuse
	// CPU is the user and system time the process has used.
	CPU time.Duration
}

// Read parses /proc/<pid>/stat. A process that does not exist is an error matching os.ErrNotExist.
func Read(pid int) (Stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}, err
	}
	return parse(pid, string(b))
}

func parse(pid int, s string) (Stat, error) {
	// The command name (field 2) may contain spaces and parentheses: fields are counted after the last ')'.
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return Stat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 || f[0] == "" {
		return Stat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return Stat{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	start, err := strconv.ParseUint(f[19], 10, 64) // field 22 of the whole line
	if err != nil {
		return Stat{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	// Fields 14 and 15: user and system time in clock ticks (USER_HZ, 100 on Linux).
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return Stat{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	const userHZ = 100
	return Stat{State: f[0][0], PPID: ppid, Start: start, CPU: time.Duration(utime+stime) * time.Second / userHZ}, nil
}

// Alive reports whether pid exists and is not a zombie.
func Alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	st, err := Read(pid)
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	return st.State != 'Z' && st.State != 'X'
}

// Descendants lists every process below pid — children, their children and so on — breadth first.
func Descendants(pid int) []int {
	children := map[int][]int{}
	for _, p := range All() {
		st, err := Read(p)
		if err != nil {
			continue // gone meanwhile
		}
		children[st.PPID] = append(children[st.PPID], p)
	}
	var out []int
	seen := map[int]bool{pid: true}
	for queue := []int{pid}; len(queue) > 0; queue = queue[1:] {
		for _, c := range children[queue[0]] {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
				queue = append(queue, c)
			}
		}
	}
	return out
}
