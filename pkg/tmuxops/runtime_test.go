package tmuxops

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/procs"
)

// deadTag is the procs.Tag of a process that has ended.
func deadTag(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	st, err := procs.Read(cmd.Process.Pid)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if err != nil {
		t.Fatal(err)
	}
	return strconv.Itoa(cmd.Process.Pid) + "." + strconv.FormatUint(st.Start, 10)
}

// TestRuntimeLeftovers: a runtime file is a leftover once nothing will read it — its writer gone and no launcher
// naming it, after a grace for a launch under way; or unread for long — and no sooner.
func TestRuntimeLeftovers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	now := time.Now()
	gone := deadTag(t)
	file := func(name string, age time.Duration) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(`{"KEY":"secret"}`), 0o600); err != nil {
			t.Fatal(err)
		}
		at := now.Add(-age)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mine, err := WriteEnvFile(dir, map[string]string{"K": "v"})
	if err != nil {
		t.Fatal(err)
	}
	orphaned := file("env-"+gone+"-1", time.Minute)
	spec := file("headless-"+gone+"-2.json", time.Minute)
	launching := file("env-"+gone+"-3", time.Minute)
	justWritten := file("env-"+gone+"-4", time.Second)
	oldStyle := file("env-123456", time.Hour)
	oldStyleFresh := file("env-654321", time.Minute)
	unread := file("env-"+procs.Tag()+"-5", time.Hour)
	other := file("ace.log", time.Hour)

	// A launcher that has not read its file yet names it in its command line (a shell waiting on a builtin read,
	// no child of its own).
	launcher := exec.Command("sh", "-c", "read x", "ace __launch", launching)
	if _, err := launcher.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := launcher.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = launcher.Process.Kill(); _ = launcher.Wait() })

	left, recheck := RuntimeLeftovers(dir, now)
	got := map[string]string{}
	for _, l := range left {
		got[l.Path] = l.Why
	}
	for _, p := range []string{orphaned, spec, oldStyle, unread} {
		if got[p] == "" {
			t.Errorf("%s is not a leftover", filepath.Base(p))
		}
	}
	for _, p := range []string{mine, launching, justWritten, oldStyleFresh, other} {
		if why, ok := got[p]; ok {
			t.Errorf("%s taken for a leftover (%s)", filepath.Base(p), why)
		}
	}
	if recheck <= 0 || recheck > launchGrace {
		t.Errorf("look again in %s: want within the launch grace (the file just written, the launcher's)", recheck)
	}
	if len(left) != 4 {
		t.Errorf("leftovers %v", got)
	}
}
