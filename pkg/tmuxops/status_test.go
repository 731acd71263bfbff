package tmuxops

import (
	"testing"
)

func TestExitStatusParsing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status, signal string
		want           int
	}{
		{"3", "", 3},
		{"0", "", 0},
		{"", "9", 137},
		{"", "", ExitUnknown}, // dead, not reaped yet: never a clean exit
	} {
		if got := exitStatus(tc.status, tc.signal); got != tc.want {
			t.Errorf("exitStatus(%q, %q) = %d, want %d", tc.status, tc.signal, got, tc.want)
		}
	}
}
