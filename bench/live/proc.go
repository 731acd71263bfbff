package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// userHZ is the unit of the times in /proc/<pid>/stat (USER_HZ, 100 on Linux).
const userHZ = 100

// procStat is what the benchmark reads of /proc/<pid>/stat.
type procStat struct {
	state byte
	ppid  int
	start uint64 // start time in ticks since boot: with the PID, it names a process across PID reuse
	// self is the process's own user and system time (all its threads); children that of the children it
	// waited for, theirs included.
	self, children time.Duration
}

func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	s := string(b)
	// The command name (field 2) may hold spaces and parentheses: fields are counted after the last ')'.
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 || f[0] == "" {
		return procStat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	n := func(k int) int64 { v, _ := strconv.ParseInt(f[k], 10, 64); return v }
	tick := func(v int64) time.Duration { return time.Duration(v) * time.Second / userHZ }
	st := procStat{state: f[0][0], ppid: int(n(1)), start: uint64(n(19)),
		self:     tick(n(11) + n(12)), // fields 14 and 15: utime, stime
		children: tick(n(13) + n(14)), // fields 16 and 17: cutime, cstime
	}
	return st, nil
}

// pids lists the processes of this PID namespace, this one left out.
func pids() []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid != os.Getpid() {
			out = append(out, pid)
		}
	}
	return out
}

// cmdline is a process's argv.
func cmdline(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
}

// helpersRunning lists the live helper processes of kind (__headless, __live) started through helperArg.
func helpersRunning(kind string) []int {
	var out []int
	for _, pid := range pids() {
		args := cmdline(pid)
		if len(args) > 3 && args[1] == helperArg && args[3] == kind {
			if st, err := readStat(pid); err == nil && st.state != 'Z' && st.state != 'X' {
				out = append(out, pid)
			}
		}
	}
	return out
}

// sweep ends, by PID, every process of the namespace but this one and the ones in keep (SIGKILL: the world
// they belonged to is closed), and reaps those that were this process's children (orphans are: this process is
// the namespace's init). It returns the commands it had to end.
func sweep(keep ...int) []string {
	var ended []string
	for _, pid := range pids() {
		if slices.Contains(keep, pid) {
			continue
		}
		st, err := readStat(pid)
		if err != nil {
			continue
		}
		if st.state != 'Z' && st.state != 'X' {
			ended = append(ended, fmt.Sprintf("%d %s", pid, strings.Join(cmdline(pid), " ")))
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	// The killed and the zombies among this process's children are reaped, each by its PID.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		left := 0
		for _, pid := range pids() {
			if slices.Contains(keep, pid) {
				continue
			}
			st, err := readStat(pid)
			if err != nil {
				continue
			}
			if st.ppid == os.Getpid() {
				var ws syscall.WaitStatus
				if got, _ := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); got == pid {
					continue
				}
			}
			left++
		}
		if left == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return ended
}

// sampler follows the CPU of processes that come and go: the agent CLI's (those whose executable is bin and
// whose parent is not: their own time and that of the children they waited for, the tools they ran) and the
// tmux server's (its own time: the panes it reaped are the CLI or the live host). Every period it reads each
// one, keeping the last reading of each; a process's last slice of CPU, after its last reading, is missed (at
// most period).
type sampler struct {
	bin  string
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	cli  map[[2]uint64]time.Duration // (pid, start) → reading
	tmux map[[2]uint64]time.Duration
}

func startSampler(bin string, period time.Duration) (*sampler, error) {
	real, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return nil, fmt.Errorf("the agent CLI: %w", err)
	}
	s := &sampler{bin: real, stop: make(chan struct{}), done: make(chan struct{}),
		cli: map[[2]uint64]time.Duration{}, tmux: map[[2]uint64]time.Duration{}}
	go func() {
		defer close(s.done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			s.look()
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s, nil
}

func (s *sampler) look() {
	type seen struct {
		st          procStat
		cli, server bool
	}
	found := map[int]seen{}
	for _, pid := range pids() {
		dir := "/proc/" + strconv.Itoa(pid)
		exe, _ := os.Readlink(dir + "/exe")
		comm, _ := os.ReadFile(dir + "/comm")
		isCLI, isTmux := exe == s.bin, strings.TrimSpace(string(comm)) == "tmux: server"
		if !isCLI && !isTmux {
			continue
		}
		st, err := readStat(pid)
		if err != nil || st.state == 'Z' || st.state == 'X' {
			continue // a zombie's reading is no longer complete: the last live one stands
		}
		found[pid] = seen{st, isCLI, isTmux}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for pid, f := range found {
		key := [2]uint64{uint64(pid), f.st.start}
		switch {
		case f.server:
			s.tmux[key] = f.st.self
		case !found[f.st.ppid].cli:
			// A CLI process started by another (claude runs its own binary as its ripgrep) is counted in its
			// parent's children once waited for.
			s.cli[key] = f.st.self + f.st.children
		}
	}
}

// totals are the CPU of every CLI process and tmux server seen so far, and how many CLI processes there were.
func (s *sampler) totals() (cli, tmux time.Duration, clis int) {
	s.look()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.cli {
		cli += d
	}
	for _, d := range s.tmux {
		tmux += d
	}
	return cli, tmux, len(s.cli)
}

// end stops sampling.
func (s *sampler) end() {
	close(s.stop)
	<-s.done
}

// loadavg is the first three fields of /proc/loadavg.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
