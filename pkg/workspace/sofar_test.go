package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSoFar: the commits since the base, what is not committed (new files too, ace's own files not) and the diff
// against the base of committed and uncommitted changes; the index is left as it was.
func TestSoFar(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m, spec, _ := setup(t)
	ws, err := m.Prepare(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	so, err := ws.SoFar(ctx)
	if err != nil || so.Commits != "" || so.Status != "" || so.Diff != "" || so.Base != ws.BaseCommit {
		t.Fatalf("a fresh copy: %+v, %v", so, err)
	}
	write := func(name, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(ws.Dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws.Dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("NOTES.md", "committed note\n")
	if _, _, err := ws.CommitAll(ctx, "Add notes"); err != nil {
		t.Fatal(err)
	}
	write("src/a.go", "package a\n\nfunc A() {}\n")
	write("new.txt", "not added\n")
	write(".ace/HANDOVER.md", "ace's own\n")
	index, err := os.ReadFile(filepath.Join(ws.Dir, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}

	so, err = ws.SoFar(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(so.Commits, " Add notes") || strings.Count(so.Commits, "\n") != 0 {
		t.Errorf("commits %q, want the one commit", so.Commits)
	}
	if !strings.Contains(so.Status, "M src/a.go") || !strings.Contains(so.Status, "?? new.txt") || strings.Contains(so.Status, ".ace") {
		t.Errorf("status %q", so.Status)
	}
	for _, want := range []string{"+committed note", "+func A() {}", "NOTES.md", "src/a.go"} {
		if !strings.Contains(so.Diff, want) {
			t.Errorf("diff lacks %q:\n%s", want, so.Diff)
		}
	}
	if !strings.Contains(so.Stat, "2 files changed") {
		t.Errorf("stat %q", so.Stat)
	}
	if after, _ := os.ReadFile(filepath.Join(ws.Dir, ".git", "index")); string(after) != string(index) {
		t.Error("SoFar changed the index")
	}
}
