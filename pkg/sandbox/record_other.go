//go:build !linux

package sandbox

import (
	"errors"
	"os/exec"
)

// Boxes are Linux-only: elsewhere ace __box runs its command unrecorded.

var errNoRecorder = errors.New("file attempts are recorded on Linux only")

func setNotDumpable() error { return nil }

func becomeSubreaper() error { return nil }

func startRecorded(cmd *exec.Cmd, _ policy, rec *recorder) error {
	rec.note(errNoRecorder.Error())
	return cmd.Start()
}
