package agents

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPromptUnsent: gemini 0.61 with the task still in its composer after ace saw its Enter taken (captured in
// CI) shows the prompt unsent; its ready composer and its working screen, the prompt echoed above, do not.
func TestPromptUnsent(t *testing.T) {
	p, _ := Builtin("gemini")
	prompt := "Read ACE_TASK.md in this folder: it describes issue #193 of acme/widgets, which you are to resolve."
	for file, want := range map[string]bool{
		"starting-real-prompt-unsent.txt": true,
		"ready-real-after-trust.txt":      false,
		"busy-real-thinking.txt":          false,
	} {
		b, err := os.ReadFile(filepath.Join("testdata", "screens", "gemini", file))
		if err != nil {
			t.Fatal(err)
		}
		if got := p.PromptUnsent(string(b), prompt); got != want {
			t.Errorf("%s: unsent %v, want %v (state %s)", file, got, want, p.Classify(string(b), false, 0))
		}
	}
}
