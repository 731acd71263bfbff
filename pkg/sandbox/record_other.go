//go:build !linux

package sandbox

import (
	"errors"
	"os"
	"os/exec"
)

// Boxes are Linux-only: elsewhere ace __box runs its command unrecorded.

var errNoRecorder = errors.New("file attempts are recorded on Linux only")

func execMain([]string) int { return 2 }

func setNotDumpable() error { return nil }

func becomeSubreaper() error { return nil }

func recordedCommand(string, string, []string) (*exec.Cmd, *os.File, error) {
	return nil, nil, errNoRecorder
}

func startNotifier(ours, theirs *os.File, _ policy, rec *recorder) {}

func reap(int) int { return 126 }
