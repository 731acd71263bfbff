package runbox

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/sandbox"
	"github.com/aceworks/ace/pkg/store"
)

// TestFileReports: what a run's boxes report of their file attempts becomes events — each path once, up to
// maxFileEvents, the reason attempts go unrecorded once — and counts in the run's state, which ace show and the
// status comment read; a path the agent chose is shown harmless (no control characters, no way out of its code
// span or the table's cell).
func TestFileReports(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	st := &eventsOnly{}
	sb := New(Options{Config: cfg, Store: st})
	r := &store.Run{ID: 1, Issue: 9, State: store.RunState{Box: &store.BoxState{Proxy: "/x/egress.sock"}}}
	p := &runProxy{files: newFileRecords(r.State.Box)}
	report := sb.fileReport(p, r.ID)
	key := sandbox.Attempt{Kind: sandbox.AttemptHidden, Op: "openat", Path: "/home/u/.ssh/id_ed25519", Count: 2}
	hostile := sandbox.Attempt{Kind: sandbox.AttemptWrite, Op: "openat", Write: true, Path: "/usr/x`|\x1b[31m\nred", Count: 1}
	report(sandbox.Report{Attempts: []sandbox.Attempt{key, hostile}})
	report(sandbox.Report{Attempts: []sandbox.Attempt{key}}) // again: counted, not recorded
	var many []sandbox.Attempt
	for i := range maxFileEvents + 10 {
		many = append(many, sandbox.Attempt{Kind: sandbox.AttemptWrite, Op: "mkdirat", Write: true, Path: fmt.Sprintf("/opt/d%d", i), Count: 1})
	}
	report(sandbox.Report{Attempts: many, More: 7, Unrecorded: "process 12 (agent) made itself unreadable"})
	report(sandbox.Report{Unrecorded: "process 12 (agent) made itself unreadable"})
	sb.proxies = map[int64]*runProxy{r.ID: p}
	sb.sync(r)

	var file []string
	for _, ev := range st.events {
		if ev.Kind == EventBoxFile {
			file = append(file, ev.Message)
		}
	}
	if len(file) != maxFileEvents+1 {
		t.Fatalf("%d box-file events, want %d (each path once up to the bound, one unrecorded note):\n%s", len(file), maxFileEvents+1, strings.Join(file, "\n"))
	}
	for _, want := range []string{
		"kept the agent from reading /home/u/.ssh/id_ed25519 (openat): the box hides it (ace's root, your home, the secrets file), 2 times",
		"kept the agent from writing /usr/x`|?[31m?red (openat): outside its working copy, its home and /tmp",
	} {
		if file[0] != want && file[1] != want {
			t.Errorf("events lack %q:\n%s", want, strings.Join(file[:2], "\n"))
		}
	}
	if !strings.HasSuffix(file[maxFileEvents-1], "; further paths are counted, not recorded") {
		t.Errorf("the last recorded path's event: %q", file[maxFileEvents-1])
	}
	if !strings.HasPrefix(file[maxFileEvents], "file attempts in the box are not all recorded: process 12 (agent) made itself unreadable") {
		t.Errorf("the unrecorded note: %q", file[maxFileEvents])
	}
	b := r.State.Box
	if want := 2 + 1 + 2 + maxFileEvents + 10 + 7; b.Blocked != want || len(b.BlockedAt) != maxBlockedAt || b.BlockedAt[0] != key.Path {
		t.Errorf("box state: blocked %d at %q; want %d at the first %d paths", b.Blocked, b.BlockedAt, want, maxBlockedAt)
	}
	if got := Line(r); !strings.HasPrefix(got, fmt.Sprintf("boxed; kept the agent from %d file attempts at `/home/u/.ssh/id_ed25519`, `/usr/x'\\|?[31m?red`, `/opt/d0`", b.Blocked)) ||
		!strings.Contains(got, "; file attempts not all recorded: process 12") {
		t.Errorf("Line = %q", got)
	}
	row := StatusRow(r)
	if !strings.HasPrefix(row, "| sandbox | kept the agent from") || strings.Count(row, "\n") != 1 || strings.Count(row, "`")%2 != 0 ||
		strings.Contains(row, "allow with") || strings.Count(strings.ReplaceAll(row, `\|`, ""), "|") != 3 {
		t.Errorf("status row %q: want one row, code spans closed, the cell whole", row)
	}
	// A restarted ace's proxy starts from the state: the paths it names are not recorded again.
	st.events = nil
	p2 := &runProxy{files: newFileRecords(b)}
	sb.fileReport(p2, r.ID)(sandbox.Report{Attempts: []sandbox.Attempt{key}})
	if len(st.events) != 0 {
		t.Errorf("after a restart: %+v", st.events)
	}
}
