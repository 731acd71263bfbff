package workflow

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/aceworks/ace/pkg/store"
)

// TestAnswerClearsOnlyTheAnsweredQuestion: an answer clears .ace/QUESTION when the file holds the question it
// answers, and keeps one the agent wrote since — the permission just allowed may have been the one to write it
// (gemini writes the file the moment its write is allowed, before ace records the answer).
func TestAnswerClearsOnlyTheAnsweredQuestion(t *testing.T) {
	t.Parallel()
	e := withParts(&Engine{})
	for _, tc := range []struct {
		name, asked, file string
		cleared           bool
	}{
		{"the file's question answered", "Formal or casual?", "Formal or casual?\n", true},
		{"a permission answered, the file written since", "The agent asks for permission to use edit", "Formal or casual?\n", false},
		{"an empty file", "Formal or casual?", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, questionFile)
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			// Not waiting (an ace send to a working agent): no tracker is needed.
			r := &store.Run{Workdir: dir, Status: store.StatusActive, Runner: store.RunnerLive}
			r.State.Question = tc.asked
			if _, err := e.humans.recordAnswer(context.Background(), r, "1"); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(path); (err != nil) != tc.cleared {
				t.Errorf("question file there: %v, want cleared %v", err == nil, tc.cleared)
			}
		})
	}
}
