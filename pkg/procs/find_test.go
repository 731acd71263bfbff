package procs

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestTagNamesAProcessUntilItEnds: a tag is this process's while it lives; a tag of a process that has ended is
// gone, and a string that is no tag is not known to be.
func TestTagNamesAProcessUntilItEnds(t *testing.T) {
	if TagGone(Tag()) {
		t.Fatalf("this process's tag %s is gone", Tag())
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	st, err := Read(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	tag := strconv.Itoa(cmd.Process.Pid) + "." + strconv.FormatUint(st.Start, 10)
	if TagGone(tag) {
		t.Error("a running process's tag is gone")
	}
	// Start returns once the exec began; the kernel sets the new command line a moment later.
	var argv []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if argv = Cmdline(cmd.Process.Pid); len(argv) > 0 {
			break
		}
	}
	if !slices.Equal(argv, []string{"sleep", "60"}) {
		t.Errorf("command line %q", argv)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if !TagGone(tag) {
		t.Error("an ended process's tag is not gone")
	}
	if TagGone(strconv.Itoa(os.Getpid())+".1") != true {
		t.Error("a tag with this PID and another start time is not gone (PID reuse)")
	}
	for _, s := range []string{"", "123456", "x.y", "random"} {
		if TagGone(s) {
			t.Errorf("%q is taken for a gone tag", s)
		}
	}
}

// TestListenersFindTheListeningProcess: the process listening on a unix socket is found by the socket's path,
// and nobody once it has stopped.
func TestListenersFindTheListeningProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	if got := Listeners(path); !slices.Equal(got, []int{os.Getpid()}) {
		t.Errorf("listeners %v, want this process %d", got, os.Getpid())
	}
	if got := Listeners(path + ".other"); len(got) != 0 {
		t.Errorf("listeners of another path: %v", got)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	if got := Listeners(path); len(got) != 0 {
		t.Errorf("listeners of a closed socket whose file stays: %v", got)
	}
}
