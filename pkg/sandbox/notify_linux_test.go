package sandbox

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestRecorderRoundTrip: a command started under the recorder's filter (from this test process: the filtered
// thread ends once it has started it) has its path-taking calls handed to the notifier, which resolves them
// (relative to the caller's directory, through a link it planted, a 32-bit or an openat2 call alike where the
// shell makes them) and records what the policy says — and only that: not the /proc entry of an ended child; the
// calls themselves go on as if unwatched (no box here: the host's files answer them).
func TestRecorderRoundTrip(t *testing.T) {
	dir := t.TempDir()
	wc, hidden, outside := filepath.Join(dir, "wc"), filepath.Join(dir, "hidden"), filepath.Join(dir, "outside")
	for _, d := range []string{wc, hidden, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(hidden, "secret"), filepath.Join(wc, "mine.txt")} {
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The shell runs from the working copy: relative paths, a link the agent makes, a write outside, /proc.
	script := strings.Join([]string{
		"cat mine.txt",
		"cat ../hidden/secret",
		"ln -s ../hidden/secret planted && cat planted",
		"echo x > ../outside/new",
		"mkdir ../outside/dir",
		"cat /proc/999999999/environ",
		// A child of its own that has ended: its PID was the namespace's, its entry nobody else's (issue #37: a
		// CLI's read of an ended child's /proc/N/environ was recorded as a process outside the box).
		"true & wait $!; cat /proc/$!/environ",
		"cat /proc/self/status",
		"mkdir ../hidden ../outside", // there already: nothing made, nothing recorded
		"echo ok > written-here",
	}, "; ")
	p := policy{hide: []string{hidden}, rw: []string{wc, "/dev"}}
	rec := newRecorder("")
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip(err)
	}
	cmd := exec.Command(sh, "-c", script)
	cmd.Dir = wc
	if err := startRecorded(cmd, p, rec); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Logf("the script: %v", err) // cat of /proc/999999999 fails
	}
	if _, err := os.Stat(filepath.Join(wc, "written-here")); err != nil {
		t.Errorf("the command's own write did not happen: %v", err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.notes) > 0 {
		t.Fatalf("recorder notes: %v", rec.notes)
	}
	var got []string
	for k, n := range rec.pending {
		// Not the call's name: the shell's mkdir is mkdir on amd64, mkdirat on arm64.
		got = append(got, fmt.Sprintf("%s %s write=%v n=%d", k.kind, k.path, k.write, n))
	}
	slices.Sort(got)
	want := []string{
		// Read directly and through the link: one attempt, twice.
		"hidden " + filepath.Join(hidden, "secret") + " write=false n=2",
		"proc /proc/999999999/environ write=false n=1",
		"write " + filepath.Join(outside, "dir") + " write=true n=1",
		"write " + filepath.Join(outside, "new") + " write=true n=1",
	}
	if !slices.Equal(got, want) {
		t.Errorf("recorded:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if rec.notified == 0 {
		t.Error("the notifier saw no call")
	}
}

// TestRecorderReadsAllFlagBits: open(2) ignores flag bits it does not know; one set high must not make a write
// outside the box's own paths look like a read.
func TestRecorderReadsAllFlagBits(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "outside", "new")
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder("")
	cmd := exec.Command(self, "open-high-bit", target) // TestMain (main_test.go) plays it
	if err := startRecorded(cmd, policy{rw: []string{filepath.Join(dir, "wc")}}, rec); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if n := rec.pending[attemptKey{AttemptWrite, "openat", true, target, ""}]; n != 1 {
		t.Errorf("the write with a high flag bit: recorded %d times; recorded: %v", n, rec.pending)
	}
}

// TestRecorderConnections: the connections that cannot succeed in a box are recorded with their destination — a
// loopback port nothing listens on, a name lookup of the program's own, an address off the loopback — and those
// that can are not: a port something listens on, a unix socket. (No box here: the test's own network namespace
// answers, and its listener is the one that counts.)
func TestRecorderConnections(t *testing.T) {
	open, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()
	sock := filepath.Join(t.TempDir(), "s.sock")
	ul, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ul.Close()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder("")
	cmd := exec.Command(self, "dial", "tcp", open.Addr().String(), "tcp", deadAddr, "udp", "127.0.0.1:53",
		"tcp", "192.0.2.1:443", "unix", sock) // TestMain (main_test.go) plays it
	if err := startRecorded(cmd, policy{rw: []string{t.TempDir(), "/dev"}}, rec); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var got []string
	for k, n := range rec.pending {
		got = append(got, fmt.Sprintf("%s %s %s n=%d", k.kind, k.op, k.path, n))
		if want := filepath.Base(self)[:min(15, len(filepath.Base(self)))]; k.prog != want {
			t.Errorf("%s %s: made by %q, want %q", k.kind, k.path, k.prog, want)
		}
	}
	slices.Sort(got)
	want := []string{
		"direct connect 192.0.2.1:443 n=1",
		"dns connect 127.0.0.1:53 n=1",
		"loopback connect " + deadAddr + " n=1",
	}
	if !slices.Equal(got, want) {
		t.Errorf("recorded:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestInBoxKnowsEndedProcesses: a process of this PID namespace that has ended is still the namespace's (its
// /proc entries read a moment late are no attempt at another process's); a PID it never gave out is not.
func TestInBoxKnowsEndedProcesses(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
		t.Skipf("PID %d was given out again", pid)
	}
	if !boxHad(pid) {
		t.Errorf("the ended process %d is not taken for the namespace's", pid)
	}
	b, err := os.ReadFile("/proc/sys/kernel/ns_last_pid")
	if err != nil {
		t.Fatal(err)
	}
	last, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if never := last + 1_000_000; boxHad(never) {
		t.Errorf("PID %d, never given out, is taken for the namespace's", never)
	}
}
