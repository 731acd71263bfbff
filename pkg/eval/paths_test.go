package eval

import (
	"os"
	"path/filepath"
	"testing"
)

func TestIsTestPathKnowsTheCommonLayouts(t *testing.T) {
	for p, want := range map[string]bool{
		"pkg/eval/build_test.go": true, "tests/test_add.sh": true, "src/foo/test_bar.py": true, "foo_test.py": true,
		"web/app.test.ts": true, "web/app.spec.js": true, "spec/models/user_spec.rb": true, "src/FooTest.java": true,
		"pkg/cli/testdata/script/help.txtar": true, "conftest.py": true, "__tests__/x.js": true, "e2e/walk.go": true,
		"pkg/eval/build.go": false, "latest.go": false, "contest/main.go": false, "attest.py": false, "lib/add.sh": false,
		"docs/testing.md": false, "src/Contest.java": false,
	} {
		if got := IsTestPath(p); got != want {
			t.Errorf("IsTestPath(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestCheckPathRefusesWhatMustNotBeWritten(t *testing.T) {
	for _, p := range []string{"", "/etc/passwd", "a/../../b", "..", "./a", "a//b", "lib/.git/config", ".git/hooks/pre-commit",
		"x/.GIT/config", "x/.git./config", "a\nb", "tab\there", "del\x7f"} {
		if err := checkPath(p); err == nil {
			t.Errorf("checkPath(%q) passed", p)
		}
	}
	for _, p := range []string{"lib/add.sh", "a b/c d.txt", "ünïcödé/ファイル.go", ".github/workflows/ci.yml", "x/.gitignore", "-rf"} {
		if err := checkPath(p); err != nil {
			t.Errorf("checkPath(%q): %v", p, err)
		}
	}
}

// TestRemoveInsideNeverLeavesTheCopy: a test file to remove whose directory is a link out of the working copy
// (a repository can hold any link) is not in the tree, and nothing outside is removed.
func TestRemoveInsideNeverLeavesTheCopy(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	victim := filepath.Join(outside, "test_x.sh")
	if err := os.WriteFile(victim, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "tests")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "lib", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "lib", "sub", "t.sh"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"tests/test_x.sh", "nowhere/x", "lib/sub/t.sh"} {
		if err := removeInside(dir, p); err != nil {
			t.Fatalf("removeInside(%s): %v", p, err)
		}
	}
	if _, err := os.Stat(victim); err != nil {
		t.Fatalf("the file beyond the link is gone: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "lib", "sub", "t.sh")); !os.IsNotExist(err) {
		t.Fatalf("the file inside the copy is still there: %v", err)
	}
}
