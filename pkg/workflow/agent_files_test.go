package workflow

import (
	"strings"
	"testing"

	"github.com/aceworks/ace/pkg/store"
)

// TestRefusedFilesRow: the status comment names the files ace refused, each in a code span the agent's choice of
// link target cannot end, nor the table's cell; more than five are counted.
func TestRefusedFilesRow(t *testing.T) {
	t.Parallel()
	r := &store.Run{Issue: 7}
	if row := refusedFilesRow(r); row != "" {
		t.Fatalf("no refusal, row %q", row)
	}
	r.State.Refused = []string{"refused .ace/DONE: a symlink out of the tree (to /x` | **boom**\n| row |)", "refused .ace/QUESTION: a FIFO"}
	row := refusedFilesRow(r)
	want := "| files | `refused .ace/DONE: a symlink out of the tree (to /x' \\| **boom** \\| row \\|)`, `refused .ace/QUESTION: a FIFO` (`ace show 7`) |\n"
	if row != want {
		t.Errorf("row\n%q\nwant\n%q", row, want)
	}
	if strings.Count(row, "\n") != 1 {
		t.Errorf("the row spans lines: %q", row)
	}
	for i := range 5 {
		r.State.Refused = append(r.State.Refused, "refused f"+string(rune('a'+i))+": a FIFO")
	}
	if row := refusedFilesRow(r); !strings.Contains(row, "and 2 more") {
		t.Errorf("row %q does not count the rest", row)
	}
	if got := RefusedLine(r); !strings.HasPrefix(got, "refused .ace/DONE: ") || !strings.Contains(got, "; refused .ace/QUESTION: a FIFO") {
		t.Errorf("RefusedLine = %q", got)
	}
}
