package agents

import "testing"

func TestCompactDue(t *testing.T) {
	cases := []struct {
		name                    string
		size, offset, threshold int64
		st                      State
		want                    bool
	}{
		{"idle past the threshold", 60 << 10, 0, 50 << 10, StateReady, true},
		{"idle, threshold counted from the last compaction", 90 << 10, 50 << 10, 50 << 10, StateReady, false},
		{"idle, exactly the threshold since the last one", 100 << 10, 50 << 10, 50 << 10, StateReady, true},
		{"busy past the threshold", 60 << 10, 0, 50 << 10, StateBusy, false},
		{"asking for approval", 60 << 10, 0, 50 << 10, StateApproval, false},
		{"asking a question", 60 << 10, 0, 50 << 10, StateQuestion, false},
		{"in a dialog", 60 << 10, 0, 50 << 10, StateDialog, false},
		{"starting", 60 << 10, 0, 50 << 10, StateStarting, false},
		{"exited", 60 << 10, 0, 50 << 10, StateExited, false},
		{"off", 60 << 10, 0, 0, StateReady, false},
		{"transcript started afresh, small", 10 << 10, 80 << 10, 50 << 10, StateReady, false},
		{"transcript started afresh, large", 70 << 10, 80 << 10, 50 << 10, StateReady, true},
	}
	for _, c := range cases {
		if got := CompactDue(c.size, c.offset, c.threshold, c.st); got != c.want {
			t.Errorf("%s: CompactDue(%d, %d, %d, %s) = %v, want %v", c.name, c.size, c.offset, c.threshold, c.st, got, c.want)
		}
	}
}
