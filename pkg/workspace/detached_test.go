package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aceworks/ace/internal/gittest"
)

// TestDetachedCopyIsAtTheCommit: a copy made at an older commit of the mirror has that commit's files and a
// detached HEAD; a commit given as anything but a full id is refused before git sees it.
func TestDetachedCopyIsAtTheCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m, spec, bare := setup(t)
	first := gittest.Run(t, bare, "rev-parse", "main")
	work := t.TempDir()
	gittest.Run(t, work, "clone", "-q", bare, ".")
	if err := os.WriteFile(filepath.Join(work, "README.md"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Run(t, work, "commit", "-qam", "second")
	gittest.Run(t, work, "push", "-q", "origin", "main")

	mirror, err := m.SyncMirror(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := m.MirrorPath(spec.Repo); mirror != want {
		t.Fatalf("mirror at %s, want %s", mirror, want)
	}
	dir := filepath.Join(t.TempDir(), "copy")
	if err := m.Detached(ctx, spec.Repo, first, dir); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "README.md")); string(b) != "hi\n" {
		t.Fatalf("README.md is %q, want the first commit's", b)
	}
	if head := gittest.Run(t, dir, "rev-parse", "HEAD"); head != first {
		t.Fatalf("HEAD at %s, want %s", head, first)
	}
	if br := gittest.Run(t, dir, "branch", "--show-current"); br != "" {
		t.Fatalf("on branch %q, want a detached HEAD", br)
	}
	for _, bad := range []string{"main", "--upload-pack=touch x", strings.ToUpper(first), first[:12]} {
		if err := m.Detached(ctx, spec.Repo, bad, filepath.Join(t.TempDir(), "bad")); err == nil || !strings.Contains(err.Error(), "not a commit id") {
			t.Errorf("Detached(%q) = %v, want a refusal", bad, err)
		}
	}
}
