package tmuxops

import (
	"os"
	"slices"
	"testing"

	"github.com/aceworks/ace/pkg/procs"
)

// TestPaneRoots: a pane's process is ended only while it is the pane's — the server's child, and for a dead pane
// not yet reaped — never the process that has its PID since.
func TestPaneRoots(t *testing.T) {
	t.Parallel()
	table := map[int]procs.Stat{
		10: {State: 'S', PPID: 1}, // a live pane's process
		11: {State: 'Z', PPID: 1}, // a dead pane's, not reaped yet
		12: {State: 'S', PPID: 7}, // a dead pane's PID, now another process's
		13: {State: 'S', PPID: 1}, // a dead pane's PID, now another pane's of the same server
		14: {State: 'S', PPID: 7}, // a live pane's PID (reaped and used again between two calls)
	}
	read := func(pid int) (procs.Stat, error) {
		st, ok := table[pid]
		if !ok {
			return st, os.ErrNotExist
		}
		return st, nil
	}
	out := "10|0|1\n11|1|1\n12|1|1\n13|1|1\n14|0|1\n15|1|1\n15|0|1\nbad\n"
	if got := paneRoots(out, read); !slices.Equal(got, []int{10, 11}) {
		t.Errorf("paneRoots = %v, want [10 11]", got)
	}
}
