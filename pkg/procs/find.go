package procs

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// All lists the PIDs in the process table.
func All() []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		if p, err := strconv.Atoi(e.Name()); err == nil && p > 0 {
			out = append(out, p)
		}
	}
	return out
}

// Cmdline is a process's argv as it started (nil when it is gone or not readable).
func Cmdline(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
}

// Mine reports whether pid is a process of this user (the owner of its /proc entry).
func Mine(pid int) bool {
	fi, err := os.Stat("/proc/" + strconv.Itoa(pid))
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}

// Comm is a process's name as it set it ("tmux: client", "tmux: server"); "" when it is gone.
func Comm(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(b), "\n")
}

// Listeners are the processes of this user that listen on the unix socket at path, in this network namespace
// (/proc/net/unix names the socket's inode, each holder's /proc/<pid>/fd the inode). A socket file nobody
// listens on is left over from a process that died.
func Listeners(path string) []int {
	f, err := os.Open("/proc/net/unix")
	if err != nil {
		return nil
	}
	defer f.Close()
	inodes := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// Num RefCount Protocol Flags Type St Inode Path; Flags 00010000 is __SO_ACCEPTCON: listening.
		fs := strings.Fields(sc.Text())
		if len(fs) < 8 || fs[7] != path {
			continue
		}
		if flags, err := strconv.ParseUint(fs[3], 16, 32); err == nil && flags&0x10000 != 0 {
			inodes["socket:["+fs[6]+"]"] = true
		}
	}
	if len(inodes) == 0 {
		return nil
	}
	var out []int
	for _, p := range All() {
		fds, _ := filepath.Glob("/proc/" + strconv.Itoa(p) + "/fd/*")
		for _, fd := range fds {
			if l, err := os.Readlink(fd); err == nil && inodes[l] {
				out = append(out, p)
				break
			}
		}
	}
	return out
}
