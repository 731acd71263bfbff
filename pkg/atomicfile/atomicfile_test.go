package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestWriteReplacesWholeAndLeavesNothingBehind(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	for _, content := range []string{"first", "second, longer than the first"} {
		if err := Write(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil || string(b) != content {
			t.Fatalf("read %q, %v; want %q", b, err, content)
		}
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("files left in the directory: %v", entries)
	}
	// A directory that cannot be written fails the write and keeps the old file.
	if os.Getuid() != 0 { // root writes anywhere
		if err := os.Chmod(dir, 0o500); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(dir, 0o700)
		if err := Write(path, []byte("third"), 0o600); err == nil {
			t.Fatal("write into a read-only directory succeeded")
		}
		if b, _ := os.ReadFile(path); string(b) != "second, longer than the first" {
			t.Fatalf("a failed write changed the file: %q", b)
		}
	}
	if err := Write(filepath.Join(dir, "missing", "x"), []byte("x"), 0o600); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
}

// Writers racing on one path each use their own temporary file: all succeed, the file holds one writer's
// content whole, and no temporary file is left.
func TestConcurrentWritersAllSucceed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "shared")
	const writers = 32
	contents := map[string]bool{}
	for i := 0; i < writers; i++ {
		contents[strings.Repeat(string(rune('a'+i%26)), 4096+i)] = true
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for c := range contents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- Write(path, []byte(c), 0o644)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if b, err := os.ReadFile(path); err != nil || !contents[string(b)] {
		t.Fatalf("final content is no writer's whole content (%d bytes, %v)", len(b), err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("files left in the directory: %v", entries)
	}
}
