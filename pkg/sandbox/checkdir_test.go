package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestDeadCheckDirs: a check's directory left by a process that is gone is removed by the next check; one of a
// process still there, and anything not a check's, stays.
func TestDeadCheckDirs(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(tmp, fmt.Sprintf("%s%d-123", checkPrefix, cmd.Process.Pid))
	alive := filepath.Join(tmp, fmt.Sprintf("%s%d-456", checkPrefix, os.Getpid()))
	old := filepath.Join(tmp, checkPrefix+"789") // named before directories had their process's pid
	for _, d := range []string{dead, alive, old} {
		if err := os.MkdirAll(filepath.Join(d, "sub"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	removeDeadCheckDirs(tmp)
	if _, err := os.Lstat(dead); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a gone process's check directory stayed: %v", err)
	}
	for _, d := range []string{alive, old} {
		if _, err := os.Lstat(d); err != nil {
			t.Errorf("%s went: %v", filepath.Base(d), err)
		}
	}
}
