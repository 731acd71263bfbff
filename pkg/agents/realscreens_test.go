package agents

import (
	"path/filepath"
	"testing"
)

// TestRealCapturesPresent keeps the real tmux captures of each CLI (testdata/screens/<agent>/*-real-*.txt,
// see testdata/screens/REAL-CAPTURES.md) from disappearing silently: TestFixturesClassify checks what they
// classify as, this checks that they are there.
func TestRealCapturesPresent(t *testing.T) {
	for _, agent := range []string{"claude", "codex", "gemini"} {
		files, err := filepath.Glob(filepath.Join("testdata", "screens", agent, "*-real-*.txt"))
		if err != nil {
			t.Fatal(err)
		}
		if len(files) == 0 {
			t.Errorf("no real capture (testdata/screens/%s/*-real-*.txt) for %s", agent, agent)
		}
	}
}
