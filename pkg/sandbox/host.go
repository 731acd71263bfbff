package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// InstallHint is how to get bubblewrap on Debian and Ubuntu.
const InstallHint = "apt-get install bubblewrap"

// ErrUnavailable is what Detect's errors match when boxes cannot be built here.
var ErrUnavailable = errors.New("sandbox unavailable")

// Host is bubblewrap as found on this machine.
type Host struct {
	bwrap         string
	version       string
	disableUserns bool
}

// Path is bwrap's path.
func (h *Host) Path() string { return h.bwrap }

// String says which bwrap boxes are built with.
func (h *Host) String() string { return h.version + " (" + h.bwrap + ")" }

// Detect finds bwrap and checks that it can build a box here (user namespaces allowed) by running one.
func Detect(ctx context.Context) (*Host, error) {
	path, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, fmt.Errorf("%w: bubblewrap (bwrap) is not installed; install: %s", ErrUnavailable, InstallHint)
	}
	h := &Host{bwrap: path}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("%w: %s --version: %w", ErrUnavailable, path, err)
	}
	h.version = strings.TrimSpace(string(out))
	help, _ := exec.CommandContext(ctx, path, "--help").CombinedOutput()
	h.disableUserns = bytes.Contains(help, []byte("--disable-userns"))
	if err := h.try(ctx); err != nil {
		return nil, err
	}
	return h, nil
}

// Available reports whether boxes work here: nil, or why not with what to do.
func Available(ctx context.Context) error {
	_, err := Detect(ctx)
	return err
}

// try runs `true` in a box with the flags every box gets.
func (h *Host) try(ctx context.Context) error {
	dir, err := checkDir()
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	self := filepath.Join(dir, "self")
	if err := os.WriteFile(self, nil, 0o755); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	args, err := h.bwrapArgs(Spec{WorkDir: dir, Home: dir}, self, []string{"true"})
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, h.bwrap, args...)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%w: %s cannot build a box here: %w: %s (user namespaces must be allowed: "+
			"sysctl kernel.unprivileged_userns_clone=1; on Ubuntu ≥ 23.10, AppArmor's "+
			"kernel.apparmor_restrict_unprivileged_userns=0 or a profile for bwrap; in a container, one allowed "+
			"to create namespaces)", ErrUnavailable, h.bwrap, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// CheckRecorder runs `true` in a box, recorded (self: ace's executable on the host, ace __box inside), and reports
// whether the box's recorder sees its calls: nil, or why file attempts go unrecorded here — seccomp user
// notification missing (Linux < 5.9) or refused (a container's seccomp profile). Boxes still keep the agent
// from them.
func (h *Host) CheckRecorder(ctx context.Context, self string) error {
	dir, err := checkDir()
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	args, err := h.bwrapArgs(Spec{WorkDir: dir, Home: dir}, self, []string{SelfPath, ChildArg, "--probe-recorder", "--", "true"})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.bwrap, args...)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("file attempts in boxes go unrecorded: %s (%w)", strings.TrimSpace(string(out)), err)
	}
	return nil
}
