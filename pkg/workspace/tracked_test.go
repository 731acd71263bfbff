package workspace

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestExcludesKeepAceFilesOutOfCommitsOnly: ace's files are ignored by git through the working copy's own
// core.excludesFile — not .git/info/exclude, which agents' file tools honour (gemini's read_file refused
// ACE_TASK.md) — and the user's global excludes still hold there; patterns an older ace put in
// .git/info/exclude move out of it; Unexclude gives a file back to git.
func TestExcludesKeepAceFilesOutOfCommitsOnly(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	write := func(path, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(home, ".config", "git", "ignore"), ".DS_Store\n")
	dir := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	write(filepath.Join(dir, ".git", "info", "exclude"), "*.log\n# ace\n/ACE_TASK.md\n")
	m, err := New(Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	w := &Workspace{Dir: dir, Repo: "acme/widgets", m: m}
	if err := w.Exclude(t.Context(), "/ACE_TASK.md", "/.ace/", "/CLAUDE.md"); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"ACE_TASK.md", ".ace/memory/notes.md", "CLAUDE.md", ".DS_Store", "a.log", "keep.txt"} {
		write(filepath.Join(dir, f), "x\n")
	}
	status := func() []string {
		t.Helper()
		out, err := w.m.git(t.Context(), dir, "status", "--porcelain", "--untracked-files=all")
		if err != nil {
			t.Fatal(err)
		}
		return strings.Fields(strings.ReplaceAll(out, "??", ""))
	}
	if got := status(); !slices.Equal(got, []string{"keep.txt"}) {
		t.Errorf("untracked %q, want only keep.txt: ace's files, the user's global and repository excludes ignored", got)
	}
	legacy, _ := os.ReadFile(legacyExcludeFile(dir))
	if got := string(legacy); got != "*.log\n" {
		t.Errorf(".git/info/exclude = %q, want only the user's own line", got)
	}
	if err := w.Unexclude("/CLAUDE.md"); err != nil {
		t.Fatal(err)
	}
	if got := status(); !slices.Equal(got, []string{"CLAUDE.md", "keep.txt"}) {
		t.Errorf("untracked %q after Unexclude, want CLAUDE.md and keep.txt", got)
	}
}
