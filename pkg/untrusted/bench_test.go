package untrusted_test

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/aceworks/ace/pkg/atomicfile"
	"github.com/aceworks/ace/pkg/untrusted"
)

// The guards' cost on the done protocol's files, beside what ace did before them in the same run:
//
//	go test ./pkg/untrusted -run '^$' -bench . -benchmem
//
// "os" is the unguarded call (os.Stat, os.ReadFile, atomicfile.Write), "guarded" the package's.

func benchTree(b *testing.B) (untrusted.Tree, string) {
	b.Helper()
	dir := b.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".ace"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".ace", "DONE"), []byte("Added GREETING.md and its test.\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	return untrusted.New(dir), dir
}

// BenchmarkExists: the pane watch's look for .ace/DONE, once per monitored run and interval.
func BenchmarkExists(b *testing.B) {
	tree, dir := benchTree(b)
	b.Run("os", func(b *testing.B) {
		for b.Loop() {
			if _, err := os.Stat(filepath.Join(dir, ".ace", "DONE")); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("guarded", func(b *testing.B) {
		for b.Loop() {
			if !tree.Exists(".ace/DONE") {
				b.Fatal("not there")
			}
		}
	})
}

// BenchmarkReadDone: the monitor's read of .ace/DONE.
func BenchmarkReadDone(b *testing.B) {
	tree, dir := benchTree(b)
	b.Run("os", func(b *testing.B) {
		for b.Loop() {
			if _, err := os.ReadFile(filepath.Join(dir, ".ace", "DONE")); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("guarded", func(b *testing.B) {
		for b.Loop() {
			if _, err := tree.ReadFile(".ace/DONE", 64<<10); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkReadMissing: the monitor's look for a .ace/QUESTION that is not there, its most common read.
func BenchmarkReadMissing(b *testing.B) {
	tree, dir := benchTree(b)
	b.Run("os", func(b *testing.B) {
		for b.Loop() {
			_, _ = os.ReadFile(filepath.Join(dir, ".ace", "QUESTION"))
		}
	})
	b.Run("guarded", func(b *testing.B) {
		for b.Loop() {
			_, _ = tree.ReadFile(".ace/QUESTION", 64<<10)
		}
	})
}

// BenchmarkWriteFollowup: a follow-up round's .ace/FOLLOWUP.md (8 KiB), written whole and synced.
func BenchmarkWriteFollowup(b *testing.B) {
	tree, dir := benchTree(b)
	data := make([]byte, 8<<10)
	b.Run("os", func(b *testing.B) {
		for b.Loop() {
			if err := atomicfile.Write(filepath.Join(dir, ".ace", "FOLLOWUP.md"), data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("guarded", func(b *testing.B) {
		for b.Loop() {
			if err := tree.WriteFile(".ace/FOLLOWUP.md", data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkReadSessionFile: the usage reader's pass over a CLI's session file (16 MiB of JSON lines), every 30 s
// per run: bufio's ReadBytes over os.Open before, Open and Lines now.
func BenchmarkReadSessionFile(b *testing.B) {
	tree, dir := benchTree(b)
	line := append(bytes.Repeat([]byte(`{"type":"assistant","message":{"usage":{"input_tokens":12}}}`), 40), '\n')
	data := bytes.Repeat(line, (16<<20)/len(line))
	path := filepath.Join(dir, "session.jsonl")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.Run("os", func(b *testing.B) {
		for b.Loop() {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			r := bufio.NewReaderSize(f, 64<<10)
			for {
				if _, err := r.ReadBytes('\n'); err != nil {
					break
				}
			}
			f.Close()
		}
	})
	b.Run("guarded", func(b *testing.B) {
		for b.Loop() {
			f, err := tree.Open("session.jsonl", 256<<20)
			if err != nil {
				b.Fatal(err)
			}
			if err := f.Lines(16<<20, func([]byte) error { return nil }); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
}
