package tmuxops

import (
	"os"
	"testing"
	"time"
)

func TestExitStatusParsing(t *testing.T) {
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

func TestSweepEnvFilesRemovesOnlyStaleOnes(t *testing.T) {
	dir := t.TempDir()
	stale, err := WriteEnvFile(dir, map[string]string{"K": "v"})
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	fresh, err := WriteEnvFile(dir, map[string]string{"K": "v"})
	if err != nil {
		t.Fatal(err)
	}
	SweepEnvFiles(dir, 10*time.Minute)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale env file kept: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("fresh env file removed: %v", err)
	}
}
