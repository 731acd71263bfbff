package workflow

import (
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/tmuxops"
)

// TestNeedCapture: a screen is read when it was never read, when output stopped for the settle time since the
// last read, or when the cached one is old (sooner while output flows: a dialog may be drawn over a spinner) —
// and not while output keeps flowing since a recent read, or nothing was printed.
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
		{"output still flowing", seen(t0, t0.Add(8*time.Second)), pane(t0.Add(10 * time.Second)), t0.Add(11 * time.Second), false},
		{"output flowing since the last read for long", seen(t0, t0.Add(6*time.Second)), pane(t0.Add(10 * time.Second)), t0.Add(11 * time.Second), true},
		{"output settled within the second tmux rounds to", seen(t0, t0.Add(11*time.Second)), pane(t0.Add(10 * time.Second)), t0.Add(15500 * time.Millisecond), false},
		{"output stopped for the settle time", seen(t0, t0.Add(11*time.Second)), pane(t0.Add(10 * time.Second)), t0.Add(16 * time.Second), true},
		{"no activity time from tmux", seen(time.Time{}, t0), pane(time.Time{}), t0.Add(time.Second), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := needCapture(tc.o, tc.pane, tc.now, settle); got != tc.want {
				t.Fatalf("needCapture = %v, want %v", got, tc.want)
			}
		})
	}
}
