// Package procs reads the Linux process table in /proc: a process's state, parent and start time, and the tree
// of processes below one. ace ends agents and whatever they left behind by PID, never by name.
package procs

import (
	"errors"
	"fmt"
	"os"
	"slices"
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
	// CPU is the user and system time the process has used; ChildCPU is its reaped children's (a command the
	// process ran and waited for), which the process keeps once they are gone.
	CPU, ChildCPU time.Duration
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
	// Fields 16 and 17: the same of its waited-for children.
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	cutime, err3 := strconv.ParseInt(f[13], 10, 64)
	cstime, err4 := strconv.ParseInt(f[14], 10, 64)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return Stat{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	const userHZ = 100
	tick := func(n int64) time.Duration { return time.Duration(n) * time.Second / userHZ }
	return Stat{State: f[0][0], PPID: ppid, Start: start, CPU: tick(utime + stime), ChildCPU: tick(cutime + cstime)}, nil
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
func Descendants(pid int) []int { return Snapshot().Descendants(pid) }

// Table is the process table at one moment: every process's Stat, by PID.
type Table map[int]Stat

// Snapshot reads the whole process table once; processes that end meanwhile are left out.
func Snapshot() Table {
	t := Table{}
	for _, p := range All() {
		if st, err := Read(p); err == nil {
			t[p] = st
		}
	}
	return t
}

// Descendants lists every process of the table below pid, breadth first.
func (t Table) Descendants(pid int) []int {
	children := map[int][]int{}
	for p, st := range t {
		children[st.PPID] = append(children[st.PPID], p)
	}
	var out []int
	seen := map[int]bool{pid: true}
	for queue := []int{pid}; len(queue) > 0; queue = queue[1:] {
		kids := children[queue[0]]
		slices.Sort(kids)
		for _, c := range kids {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
				queue = append(queue, c)
			}
		}
	}
	return out
}

// TreeCPU is the CPU time the processes below pid have used, with pid's own when withRoot (see Table.TreeCPU).
// It walks the tree down from pid through each thread's /proc/<pid>/task/<tid>/children — a few reads for an
// agent's tree, where a Snapshot reads every process of the machine — and reads the whole table only where the
// kernel has no such files.
//
// A process is read after the processes below it: one that ends and is reaped during the walk then shows in its
// parent's children's time, read later, where reading the parent first lost it for that look — a build ending at
// the moment of an idle check took the tree's CPU down and the agent for idle. Read this way a process's time may
// be counted twice for that look (before its end and in its parent's), which only errs toward work.
func TreeCPU(pid int, withRoot bool) time.Duration {
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid) + "/task"); err != nil {
		return 0
	}
	sum, ok := subtreeCPU(liveProcs{}, pid, withRoot, map[int]bool{pid: true})
	if !ok {
		return Snapshot().TreeCPU(pid, withRoot)
	}
	return sum
}

// procSource is where subtreeCPU reads processes: /proc (liveProcs), or a test's table that changes between reads.
type procSource interface {
	children(pid int) (kids []int, ok bool)
	read(pid int) (Stat, error)
}

type liveProcs struct{}

func (liveProcs) children(pid int) ([]int, bool) { return children(pid) }
func (liveProcs) read(pid int) (Stat, error)     { return Read(pid) }

// subtreeCPU is the CPU time of every process below p, and p's own when self, each read after its children; ok is
// false where the kernel has no children files.
func subtreeCPU(src procSource, p int, self bool, seen map[int]bool) (sum time.Duration, ok bool) {
	kids, ok := src.children(p)
	if !ok {
		return 0, false
	}
	for _, c := range kids {
		if seen[c] {
			continue
		}
		seen[c] = true
		cpu, ok := subtreeCPU(src, c, true, seen)
		if !ok {
			return 0, false
		}
		sum += cpu
	}
	if !self {
		return sum, true
	}
	if st, err := src.read(p); err == nil {
		sum += st.CPU + st.ChildCPU
	}
	return sum, true
}

// children lists pid's children from its threads' children files; ok is false where the kernel has none.
func children(pid int) (kids []int, ok bool) {
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return nil, true // gone meanwhile: no children to count
	}
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + t.Name() + "/children")
		if errors.Is(err, os.ErrNotExist) {
			if _, terr := os.Stat("/proc/" + strconv.Itoa(pid) + "/task/" + t.Name()); terr == nil {
				return nil, false // the thread is there, its children file is not: no CONFIG_PROC_CHILDREN
			}
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				kids = append(kids, c)
			}
		}
	}
	return kids, true
}

// TreeCPU is the CPU time the processes below pid have used, with pid's own when withRoot, each process's
// reaped children included: a command that ran and ended between two looks still counts, as long as a process
// of the tree waited for it. It only grows while the tree's processes live.
func (t Table) TreeCPU(pid int, withRoot bool) time.Duration {
	var sum time.Duration
	pids := t.Descendants(pid)
	if withRoot {
		pids = append(pids, pid)
	}
	for _, p := range pids {
		if st, ok := t[p]; ok {
			sum += st.CPU + st.ChildCPU
		}
	}
	return sum
}

// What counts as a process tree working: more CPU than BusyShare of one core over the time it was measured,
// plus BusySlack. A CLI that only redraws its spinner (claude 2.1.332 waiting on a request that never answers used
// 2.4 % of a core) or waits at a dialog stays below it; running a tool, a build or the model's stream through its
// renderer goes far above.
const (
	BusyShare = 0.05
	BusySlack = 100 * time.Millisecond
)

// Busy reports whether cpu, the CPU time a process tree used over a wall time of over, is work.
func Busy(cpu, over time.Duration) bool {
	return cpu > time.Duration(BusyShare*float64(over))+BusySlack
}
