package untrusted_test

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/untrusted"
)

const secret = "host-secret-canary"

// layout is a tree beside a secret of the host's: the tree holds .ace/, the secret sits outside it.
type layout struct {
	tree    untrusted.Tree
	dir     string // the tree's directory
	outside string // a directory beside the tree, which nothing may reach through it
	secret  string // a file in outside
}

func newLayout(t *testing.T) layout {
	t.Helper()
	base := t.TempDir()
	l := layout{dir: filepath.Join(base, "tree"), outside: filepath.Join(base, "outside")}
	l.secret = filepath.Join(l.outside, "id_ed25519")
	l.tree = untrusted.New(l.dir)
	for _, d := range []string{filepath.Join(l.dir, ".ace"), l.outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(l.secret, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	return l
}

func (l layout) write(t *testing.T, rel, content string) {
	t.Helper()
	p := filepath.Join(l.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (l layout) symlink(t *testing.T, target, rel string) {
	t.Helper()
	if err := os.Symlink(target, filepath.Join(l.dir, rel)); err != nil {
		t.Fatal(err)
	}
}

// refused asserts that err is a Refusal whose finding holds each of want, and that nothing of the secret is in it.
func refused(t *testing.T, err error, want ...string) {
	t.Helper()
	r, ok := untrusted.IsRefusal(err)
	if !ok {
		t.Fatalf("error %v (%T), want a refusal", err, err)
	}
	for _, w := range want {
		if !strings.Contains(r.Error(), w) {
			t.Errorf("refusal %q lacks %q", r.Error(), w)
		}
	}
	if strings.Contains(r.Error(), secret) {
		t.Errorf("refusal %q holds the secret", r.Error())
	}
}

// promptly runs f and fails the test when it does not return within a few seconds (a FIFO opened blocking
// would wait for a writer for ever).
func promptly(t *testing.T, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("did not return: it waited on the file")
		return nil
	}
}

func TestReadRegularFile(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	l.write(t, ".ace/DONE", "Added GREETING.md.\n")
	b, err := l.tree.ReadFile(".ace/DONE", 64<<10)
	if err != nil || string(b) != "Added GREETING.md.\n" {
		t.Fatalf("ReadFile = %q, %v", b, err)
	}
	if _, err := l.tree.ReadFile(".ace/QUESTION", 64<<10); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a missing file: %v, want fs.ErrNotExist", err)
	}
	if _, err := untrusted.New(filepath.Join(l.dir, "gone")).ReadFile("x", 1); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a missing tree: %v, want fs.ErrNotExist", err)
	}
	b, err = l.tree.ReadFile(".ace/empty", 1)
	if !errors.Is(err, fs.ErrNotExist) || b != nil {
		t.Fatalf("ReadFile of nothing = %q, %v", b, err)
	}
	l.write(t, ".ace/exact", "12345678")
	if b, err := l.tree.ReadFile(".ace/exact", 8); err != nil || string(b) != "12345678" {
		t.Fatalf("a file of exactly the cap: %q, %v", b, err)
	}
}

// TestReadSymlinks: a link that stays in the tree is followed; one that leaves it — absolute, relative, through
// a linked parent, hidden in a chain — is refused with where it led, and nothing of the secret is read.
func TestReadSymlinks(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	l.write(t, "README.md", "in the tree\n")
	l.symlink(t, "../README.md", ".ace/DONE")
	if b, err := l.tree.ReadFile(".ace/DONE", 1<<10); err != nil || string(b) != "in the tree\n" {
		t.Fatalf("a link in the tree: %q, %v", b, err)
	}
	l.symlink(t, l.secret, ".ace/QUESTION")
	_, err := l.tree.ReadFile(".ace/QUESTION", 1<<10)
	refused(t, err, ".ace/QUESTION", "a symlink out of the tree (to "+l.secret+")")

	l.symlink(t, "../../outside/id_ed25519", ".ace/FOLLOWUP.md")
	_, err = l.tree.ReadFile(".ace/FOLLOWUP.md", 1<<10)
	refused(t, err, "a symlink out of the tree (to ../../outside/id_ed25519)")

	l.symlink(t, "QUESTION", ".ace/chain")
	_, err = l.tree.ReadFile(".ace/chain", 1<<10)
	refused(t, err, "symlink out of the tree")

	if err := os.MkdirAll(filepath.Join(l.dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	l.symlink(t, l.outside, "sub/memory")
	_, err = l.tree.ReadFile("sub/memory/id_ed25519", 1<<10)
	refused(t, err, "sub/memory is a symlink out of the tree (to "+l.outside+")")

	l.symlink(t, "loop", ".ace/loop")
	_, err = l.tree.ReadFile(".ace/loop", 1<<10)
	refused(t, err, "loop of symlinks")
}

// TestReadParentLinkedInTree: a parent directory linked within the tree is followed.
func TestReadParentLinkedInTree(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	l.write(t, "real/AGENTS.md", "- a note\n")
	l.symlink(t, "../real", ".ace/memory")
	if b, err := l.tree.ReadFile(".ace/memory/AGENTS.md", 1<<10); err != nil || string(b) != "- a note\n" {
		t.Fatalf("through a parent linked in the tree: %q, %v", b, err)
	}
}

// TestReadHardLink: a file of two names is refused, whichever name is read (one may be out of the tree: a hard
// link does not say where its other names are).
func TestReadHardLink(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	if err := os.Link(l.secret, filepath.Join(l.dir, ".ace", "DONE")); err != nil {
		t.Skipf("no hard link here: %v", err)
	}
	_, err := l.tree.ReadFile(".ace/DONE", 1<<10)
	refused(t, err, ".ace/DONE: a hard link")
}

// TestReadSpecialFiles: a FIFO, a socket, a device and a directory are refused at once, never opened for a
// read that would wait.
func TestReadSpecialFiles(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	if err := syscall.Mkfifo(filepath.Join(l.dir, ".ace", "DONE"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := promptly(t, func() error { _, err := l.tree.ReadFile(".ace/DONE", 1<<10); return err })
	refused(t, err, ".ace/DONE: a FIFO")

	// A FIFO reached through a link in the tree is still a FIFO.
	l.symlink(t, "DONE", ".ace/QUESTION")
	err = promptly(t, func() error { _, err := l.tree.ReadFile(".ace/QUESTION", 1<<10); return err })
	refused(t, err, "a FIFO")

	sock := filepath.Join(l.dir, ".ace", "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = promptly(t, func() error { _, err := l.tree.ReadFile(".ace/s", 1<<10); return err })
	refused(t, err, ".ace/s")

	if err := os.Mkdir(filepath.Join(l.dir, ".ace", "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = l.tree.ReadFile(".ace/dir", 1<<10)
	refused(t, err, ".ace/dir: a directory")
}

// TestReadDevice: a device node (which only a privileged process can make: an agent in a box cannot) is
// refused without being read.
func TestReadDevice(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	// The same device as /dev/zero (1, 5): endless, so a read of it would grow ace to its cap.
	if err := syscall.Mknod(filepath.Join(l.dir, ".ace", "DONE"), syscall.S_IFCHR|0o644, 1<<8|5); err != nil {
		t.Skipf("mknod is not permitted here (%v): an agent cannot make a device either", err)
	}
	err := promptly(t, func() error { _, err := l.tree.ReadFile(".ace/DONE", 1<<10); return err })
	refused(t, err, ".ace/DONE: a character device")
}

// TestReadOversized: a 3 GiB sparse file is refused by its size before a byte is read, and reading it costs
// ace nothing like its size. Not parallel: the allocation count is the process's.
func TestReadOversized(t *testing.T) {
	l := newLayout(t)
	p := filepath.Join(l.dir, ".ace", "DONE")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(3 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = l.tree.ReadFile(".ace/DONE", 64<<10)
	runtime.ReadMemStats(&after)
	refused(t, err, ".ace/DONE: 3.0 GiB, over the 64 KiB cap")
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("reading it allocated %d bytes", grew)
	}
}

// TestReadGrowsWhileRead: a file within its cap when opened that grows past it while read (the agent appends)
// is refused when the cap is passed; the read holds no more than the cap.
func TestReadGrowsWhileRead(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	l.write(t, ".ace/DONE", "short\n")
	f, err := l.tree.Open(".ace/DONE", 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := os.OpenFile(filepath.Join(l.dir, ".ace", "DONE"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(bytes.Repeat([]byte("x"), 1<<20)); err != nil {
		t.Fatal(err)
	}
	w.Close()
	b, err := io.ReadAll(f)
	refused(t, err, "grew past the 1 KiB cap")
	if len(b) > 1<<10+1 {
		t.Errorf("read %d bytes past the cap", len(b))
	}
}

// TestReadSwappedAfterOpen: what was checked is what is read — a link swapped in for the name after the open
// (to the secret) changes nothing.
func TestReadSwappedAfterOpen(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	l.write(t, ".ace/DONE", "honest summary\n")
	f, err := l.tree.Open(".ace/DONE", 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	swap := filepath.Join(l.dir, ".ace", "swap")
	if err := os.Symlink(l.secret, swap); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(swap, filepath.Join(l.dir, ".ace", "DONE")); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(f)
	if err != nil || string(b) != "honest summary\n" {
		t.Fatalf("read %q, %v; want the file that was opened", b, err)
	}
	_, err = l.tree.ReadFile(".ace/DONE", 1<<10)
	refused(t, err, "symlink out of the tree")
}

// TestLinesSkipsLongLines: a line over the cap is skipped whole and never held; the lines around it are read.
func TestLinesSkipsLongLines(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	long := strings.Repeat("y", 300<<10)
	l.write(t, "s.jsonl", "one\n"+long+"\ntwo\n"+long+"\nthree")
	f, err := l.tree.Open("s.jsonl", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []string
	err = f.Lines(100<<10, func(line []byte) error { got = append(got, string(line)); return nil })
	if err != nil || strings.Join(got, "|") != "one\n|two\n|three" {
		t.Fatalf("lines %q, %v", got, err)
	}
}

func TestSize(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 64 << 10: "64 KiB", 3 << 30: "3 GiB", 1536: "1.5 KiB"} {
		if got := untrusted.Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}
