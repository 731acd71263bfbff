package procs

import (
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"
)

func TestParseOddCommandNames(t *testing.T) {
	line := "42 (a) b (c)) S 7 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 123456 1000 100 18446744073709551615"
	st, err := parse(42, line)
	if err != nil || st.State != 'S' || st.PPID != 7 || st.Start != 123456 || st.CPU != 30*time.Millisecond {
		t.Fatalf("parse: %+v %v", st, err)
	}
	if _, err := parse(1, "garbage"); err == nil {
		t.Fatal("garbage parsed")
	}
}

// TestTreeAndLiveness: a grandchild is found below this process, is alive while it runs, and is not once it
// has been killed and reaped.
func TestTreeAndLiveness(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 600 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var sleeper int // the grandchild, ended by PID: once sh is gone it is no longer below anything of ours
	t.Cleanup(func() {
		if sleeper > 0 {
			_ = syscall.Kill(sleeper, syscall.SIGKILL)
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	var below []int
	for range 200 {
		if below = Descendants(os.Getpid()); len(below) >= 2 {
			break
		}
		exec.Command("sleep", "0.01").Run()
	}
	kids := Descendants(cmd.Process.Pid)
	if len(kids) == 1 {
		sleeper = kids[0]
	}
	if !slices.Contains(below, cmd.Process.Pid) || len(kids) != 1 || !slices.Contains(below, kids[0]) {
		t.Fatalf("descendants of the test %v, of sh %v", below, kids)
	}
	if !Alive(cmd.Process.Pid) {
		t.Fatal("a running process is not alive")
	}
	st, err := Read(cmd.Process.Pid)
	if err != nil || st.PPID != os.Getpid() || st.Start == 0 {
		t.Fatalf("stat %+v %v", st, err)
	}
	_ = cmd.Process.Kill()
	for range 200 {
		if !Alive(cmd.Process.Pid) {
			break
		}
		exec.Command("sleep", "0.01").Run()
	}
	if Alive(cmd.Process.Pid) {
		t.Fatal("a killed process (a zombie until reaped) is alive")
	}
}

// TestTreeCPUKeepsReapedCommands: a command that burnt CPU and ended still counts in its tree (its parent's
// children's time), so that work done between two looks is seen.
func TestTreeCPUKeepsReapedCommands(t *testing.T) {
	line := "42 (sh) S 7 42 42 0 -1 4194560 100 0 0 0 1 2 30 40 20 0 1 0 123456 1000 100 18446744073709551615"
	if st, err := parse(42, line); err != nil || st.CPU != 30*time.Millisecond || st.ChildCPU != 700*time.Millisecond {
		t.Fatalf("parse: %+v %v", st, err)
	}
	cmd := exec.Command("sh", "-c", `(i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done); echo burnt; exec sleep 600`)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	buf := make([]byte, 6)
	if _, err := out.Read(buf); err != nil {
		t.Fatal(err)
	}
	if cpu := Snapshot().TreeCPU(os.Getpid(), false); cpu < 10*time.Millisecond {
		t.Errorf("the tree below this test used %s after the loop ended, want the loop's time", cpu)
	}
	if walked, table := TreeCPU(os.Getpid(), false), Snapshot().TreeCPU(os.Getpid(), false); walked != table {
		t.Errorf("walking the tree found %s, the whole table %s", walked, table)
	}
}

// reapingTable is a process table in which a process ends and is reaped by its parent during a walk: once the
// walk has listed the parent's children, the child is gone and its time is in the parent's children's time.
type reapingTable struct {
	parent, child int
	stats         map[int]Stat
	reaped        bool
}

func (r *reapingTable) children(pid int) ([]int, bool) {
	if pid != r.parent || r.reaped {
		return nil, true
	}
	kids := []int{r.child}
	// Between this listing and the reads that follow, the child ends and its parent reaps it.
	r.reaped = true
	st := r.stats[r.parent]
	st.ChildCPU += r.stats[r.child].CPU
	r.stats[r.parent] = st
	delete(r.stats, r.child)
	return kids, true
}

func (r *reapingTable) read(pid int) (Stat, error) {
	st, ok := r.stats[pid]
	if !ok {
		return Stat{}, os.ErrNotExist
	}
	return st, nil
}

// TestTreeCPUKeepsACommandReapedMidWalk: a command that ends while its tree is read (a build ending at the moment
// of an idle check) still counts, in its parent's children's time: its parent is read after it.
func TestTreeCPUKeepsACommandReapedMidWalk(t *testing.T) {
	tab := &reapingTable{parent: 10, child: 11, stats: map[int]Stat{
		10: {CPU: 50 * time.Millisecond},
		11: {CPU: 3 * time.Second}, // the build
	}}
	cpu, ok := subtreeCPU(tab, 10, true, map[int]bool{10: true})
	if !ok || cpu != 3050*time.Millisecond {
		t.Fatalf("tree CPU %s (ok %v), want 3.05s: the reaped build's time lost", cpu, ok)
	}
}
