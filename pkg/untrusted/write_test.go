package untrusted_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// unchanged asserts that the secret outside the tree still holds what it held, and that nothing new appeared
// beside it.
func (l layout) unchanged(t *testing.T) {
	t.Helper()
	if b, err := os.ReadFile(l.secret); err != nil || string(b) != secret {
		t.Errorf("the file outside the tree now holds %q (%v)", b, err)
	}
	entries, _ := os.ReadDir(l.outside)
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("outside the tree: %v, want the secret alone", names)
	}
}

func (l layout) read(t *testing.T, rel string) string {
	t.Helper()
	fi, err := os.Lstat(filepath.Join(l.dir, rel))
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("%s: %v, %v; want a regular file", rel, fi, err)
	}
	b, err := os.ReadFile(filepath.Join(l.dir, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestWriteFile(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	if err := l.tree.WriteFile(".ace/HANDOVER.md", []byte("# Handover\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if got := l.read(t, ".ace/HANDOVER.md"); got != "# Handover\n" {
		t.Fatalf("wrote %q", got)
	}
	fi, _ := os.Stat(filepath.Join(l.dir, ".ace", "HANDOVER.md"))
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", fi.Mode().Perm())
	}
	if err := l.tree.WriteFile("ACE_TASK.md", []byte("task"), 0o644); err != nil || l.read(t, "ACE_TASK.md") != "task" {
		t.Fatalf("at the top: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Join(l.dir, ".ace"))
	if len(entries) != 1 {
		t.Errorf(".ace holds %d entries, want the file alone (no temporary left)", len(entries))
	}
}

// TestWriteReplacesLinks: a symlink or a hard link at the name is replaced by the new file; the file it led to,
// outside the tree, is untouched.
func TestWriteReplacesLinks(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	l.symlink(t, l.secret, ".ace/FOLLOWUP.md")
	if err := l.tree.WriteFile(".ace/FOLLOWUP.md", []byte("round 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := l.read(t, ".ace/FOLLOWUP.md"); got != "round 1\n" {
		t.Errorf("wrote %q", got)
	}
	if err := os.Link(l.secret, filepath.Join(l.dir, ".ace", "VERIFY.md")); err != nil {
		t.Skipf("no hard link here: %v", err)
	}
	if err := l.tree.WriteFile(".ace/VERIFY.md", []byte("verify failed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := l.read(t, ".ace/VERIFY.md"); got != "verify failed\n" {
		t.Errorf("wrote %q", got)
	}
	l.unchanged(t)
}

// TestWriteParentLinkedOut: a parent that leads out of the tree is refused; nothing is written, made or
// removed outside.
func TestWriteParentLinkedOut(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	l.symlink(t, l.outside, ".ace/memory")
	err := l.tree.WriteFile(".ace/memory/AGENTS.md", []byte("x"), 0o644)
	refused(t, err, ".ace/memory is a symlink out of the tree (to "+l.outside+")")
	err = l.tree.MkdirAll(".ace/memory/deeper", 0o755)
	refused(t, err, "symlink out of the tree")
	err = l.tree.Remove(".ace/memory/id_ed25519")
	refused(t, err, "symlink out of the tree")
	if err := os.Symlink(l.outside, filepath.Join(l.dir, "dotace")); err != nil {
		t.Fatal(err)
	}
	err = l.tree.WriteFile("dotace/id_ed25519", []byte("overwritten"), 0o600)
	refused(t, err, "dotace is a symlink out of the tree")
	l.unchanged(t)
}

// TestWriteParentLinkedInTree: a parent linked within the tree is followed (it leads nowhere the agent cannot
// write), and the file is written there.
func TestWriteParentLinkedInTree(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	if err := os.Mkdir(filepath.Join(l.dir, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	l.symlink(t, "../real", ".ace/memory")
	if err := l.tree.WriteFile(".ace/memory/status.md", []byte("ok\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := l.read(t, "real/status.md"); got != "ok\n" {
		t.Errorf("wrote %q", got)
	}
}

// TestWriteOverDirectory: a directory at the name is refused, and left as it is.
func TestWriteOverDirectory(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	if err := os.MkdirAll(filepath.Join(l.dir, "ACE_TASK.md", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := l.tree.WriteFile("ACE_TASK.md", []byte("task"), 0o644)
	refused(t, err, "ACE_TASK.md: a directory")
	if fi, err := os.Stat(filepath.Join(l.dir, "ACE_TASK.md", "x")); err != nil || !fi.IsDir() {
		t.Errorf("the directory is gone: %v", err)
	}
}

// TestWriteOverFIFO: a FIFO at the name is replaced without being opened (a write would wait for a reader).
func TestWriteOverFIFO(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	if err := syscall.Mkfifo(filepath.Join(l.dir, ".ace", "HANDOVER.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := promptly(t, func() error { return l.tree.WriteFile(".ace/HANDOVER.md", []byte("h"), 0o644) })
	if err != nil || l.read(t, ".ace/HANDOVER.md") != "h" {
		t.Fatalf("over a FIFO: %v", err)
	}
}

// TestRemove removes a link, never what it leads to.
func TestRemove(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	l.symlink(t, l.secret, ".ace/DONE")
	if err := l.tree.Remove(".ace/DONE"); err != nil {
		t.Fatal(err)
	}
	if err := l.tree.Remove(".ace/DONE"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("removing it again: %v, want fs.ErrNotExist", err)
	}
	l.unchanged(t)
}

func TestExists(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	l.symlink(t, l.secret, ".ace/DONE")
	if !l.tree.Exists(".ace/DONE") {
		t.Error("a link out of the tree is something there")
	}
	if l.tree.Exists(".ace/QUESTION") {
		t.Error("nothing is there")
	}
	l.symlink(t, l.outside, "out")
	if !l.tree.Exists("out/id_ed25519") {
		t.Error("a path through a link out of the tree is something ace will refuse, so something there")
	}
}

// TestSub: a sub tree is bounded by its root: a sub directory replaced by a link out is refused.
func TestSub(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	l.write(t, "home/.claude/settings.json", "{}")
	if b, err := l.tree.Sub("home/.claude").ReadFile("settings.json", 1<<10); err != nil || string(b) != "{}" {
		t.Fatalf("in a sub tree: %q, %v", b, err)
	}
	l.symlink(t, l.outside, "home/.codex")
	_, err := l.tree.Sub("home/.codex").ReadFile("id_ed25519", 1<<10)
	refused(t, err, "home/.codex is a symlink out of the tree")
	err = l.tree.Sub("home/.codex").WriteFile("config.toml", []byte("x"), 0o600)
	refused(t, err, "home/.codex is a symlink out of the tree")
	l.unchanged(t)
	if p := l.tree.Sub("home").Path("a/b"); p != filepath.Join(l.dir, "home", "a", "b") {
		t.Errorf("Path = %s", p)
	}
}

// TestWalk: a walk lists entries with their own types, never enters a linked directory (in the tree or out),
// and is bounded in depth.
func TestWalk(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	l.write(t, "s/2026/01/a.jsonl", "a")
	l.write(t, "s/2026/02/b.jsonl", "b")
	l.symlink(t, l.outside, "s/out")
	l.symlink(t, "2026", "s/in")
	if err := syscall.Mkfifo(filepath.Join(l.dir, "s", "fifo.jsonl"), 0o644); err != nil {
		t.Fatal(err)
	}
	var seen []string
	err := l.tree.Walk("s", func(rel string, d fs.DirEntry) error {
		if d.Name() == "02" {
			return fs.SkipDir
		}
		seen = append(seen, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "s/2026 s/2026/01 s/2026/01/a.jsonl s/fifo.jsonl s/in s/out"
	if got := strings.Join(seen, " "); got != want {
		t.Errorf("walked %q, want %q", got, want)
	}
	if err := l.tree.Walk("nothing", func(string, fs.DirEntry) error { t.Error("called"); return nil }); err != nil {
		t.Errorf("walking nothing: %v", err)
	}
	deep := "d" + strings.Repeat("/d", 10)
	l.write(t, deep+"/f", "f")
	err = l.tree.Walk("d", func(string, fs.DirEntry) error { return nil })
	refused(t, err, "more than 8 levels")
	l.symlink(t, l.outside, "linkedwalk")
	err = l.tree.Walk("linkedwalk", func(string, fs.DirEntry) error { return nil })
	refused(t, err, "linkedwalk: a symlink out of the tree")
}
