package workspace

import (
	"os"
	"path/filepath"
	"testing"
)

func TestUnexcludeRemovesOnlyThoseLines(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".git", "info"), 0o755); err != nil {
		t.Fatal(err)
	}
	w := &Workspace{Dir: dir}
	if err := w.Exclude("/ACE_TASK.md", "/.ace/", "/CLAUDE.md"); err != nil {
		t.Fatal(err)
	}
	if err := w.Unexclude("/CLAUDE.md"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, ".git", "info", "exclude"))
	if got, want := string(b), "# ace\n/ACE_TASK.md\n/.ace/\n"; got != want {
		t.Errorf("exclude = %q, want %q", got, want)
	}
}
