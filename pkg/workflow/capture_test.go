package workflow

import (
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/tmuxops"
)

// TestNeedCapture: a screen is read when it was never read, when output stopped for the settle time since the
// last read, or when the cached one is old — and not while output keeps flowing or nothing was printed.
func TestNeedCapture(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	settle := 5 * time.Second
	seen := func(activity time.Time, at time.Time) *observed {
		return &observed{activity: activity, capturedAt: at}
	}
	pane := func(activity time.Time) tmuxops.Pane { return tmuxops.Pane{Session: "ace-x-1", Activity: activity} }
	for _, tc := range []struct {
		name string
		o    *observed
		pane tmuxops.Pane
		now  time.Time
		want bool
	}{
		{"never captured", &observed{}, pane(t0), t0, true},
		{"nothing printed since", seen(t0, t0.Add(time.Second)), pane(t0), t0.Add(20 * time.Second), false},
		{"read within the second of the last output", seen(t0, t0.Add(300*time.Millisecond)), pane(t0), t0.Add(6 * time.Second), true},
		{"read within that second, not yet settled", seen(t0, t0.Add(300*time.Millisecond)), pane(t0), t0.Add(2 * time.Second), false},
		{"cached screen too old", seen(t0, t0), pane(t0), t0.Add(recaptureEvery), true},
		{"output still flowing", seen(t0, t0), pane(t0.Add(10 * time.Second)), t0.Add(11 * time.Second), false},
		{"output settled within the second tmux rounds to", seen(t0, t0), pane(t0.Add(10 * time.Second)), t0.Add(15500 * time.Millisecond), false},
		{"output stopped for the settle time", seen(t0, t0), pane(t0.Add(10 * time.Second)), t0.Add(16 * time.Second), true},
		{"no activity time from tmux", seen(time.Time{}, t0), pane(time.Time{}), t0.Add(time.Second), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := needCapture(tc.o, tc.pane, tc.now, settle); got != tc.want {
				t.Fatalf("needCapture = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRevisitWakesTheJob: a screen the monitor saw and will act on only later (a dialog settling before its
// answer) prints nothing more, yet the pane watch wakes the run's job once that time has come — and not before.
func TestRevisitWakesTheJob(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	e := withParts(&Engine{cfg: cfg})
	t0 := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	// Read 2 s after the dialog was drawn: nothing printed since, so only the revisit can wake the job.
	e.tmux.seen[1] = &observed{activity: t0, capturedAt: t0.Add(2 * time.Second), state: agents.StateDialog}
	h := Held{RunID: 1, Session: "ace-widgets-193", Workdir: t.TempDir(), Until: t0.Add(time.Minute)}
	panes := map[string]tmuxops.Pane{h.Session: {Session: h.Session, Activity: t0}}
	if e.tmux.needsVisit(h, panes, t0.Add(3*time.Second)) {
		t.Fatal("woken with nothing to do")
	}
	e.tmux.revisitAt(1, t0.Add(4*time.Second))
	if e.tmux.needsVisit(h, panes, t0.Add(3*time.Second)) {
		t.Error("woken before the revisit is due")
	}
	if !e.tmux.needsVisit(h, panes, t0.Add(4*time.Second)) {
		t.Error("not woken when the revisit is due: the dialog would wait for the quiet snooze to end")
	}
}
