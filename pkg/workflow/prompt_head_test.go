package workflow

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestPromptHead: the run keeps the delivered prompt's beginning, trimmed and bounded, never a broken character.
func TestPromptHead(t *testing.T) {
	if got := promptHead("  Read ACE_TASK.md in this folder  "); got != "Read ACE_TASK.md in this folder" {
		t.Errorf("short prompt: %q", got)
	}
	long := strings.Repeat("a", promptHeadMax-1) + "é and more"
	got := promptHead(long)
	if len(got) > promptHeadMax || !utf8.ValidString(got) || got != strings.Repeat("a", promptHeadMax-1) {
		t.Errorf("long prompt: %q (%d bytes)", got, len(got))
	}
}
