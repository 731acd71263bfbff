package claude

import (
	"strings"
	"testing"
)

// TestClaudeProjectDir matches claude 2.1's own folder names (computed with its sanitizePath in node): a long
// path is cut at 200 characters and suffixed with its hash; each UTF-16 unit that is no ASCII letter or digit
// becomes "-".
func TestClaudeProjectDir(t *testing.T) {
	t.Parallel()
	long := "/home/user/" + strings.Repeat("a-very-long-folder-name/", 9) + "prøject 😀"
	for path, want := range map[string]string{
		"/home/user/project":   "-home-user-project",
		"/home/user/prøject 😀": "-home-user-pr-ject---",
		long:                   "-home-user" + strings.Repeat("-a-very-long-folder-name", 7) + "-a-very-long-folder-na-cjhlqx",
	} {
		if got := projectDir(path); got != want {
			t.Errorf("projectDir(%q) = %q, want %q", path, got, want)
		}
	}
}
