package eval

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLatestAllByRepository: each repository's latest eval under the root, in the order of their names; one
// without results is left out, and one whose results cannot be read is named in the error without hiding the
// others.
func TestLatestAllByRepository(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write := func(repo string, rs ...RunResult) {
		dir := DirBeside(DefaultTasks(root, repo))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i, r := range rs {
			r.N, r.Repo = i+1, repo
			if err := WriteResult(dir, r); err != nil {
				t.Fatal(err)
			}
		}
	}
	at := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	write("zeta/app", RunResult{Item: Item{InstanceID: "z-1", Agent: "codex", Run: 1}, Solved: true, ScoredAt: at})
	write("acme/calc", RunResult{Item: Item{InstanceID: "c-1", Agent: "claude", Run: 1}, ScoredAt: at},
		RunResult{Item: Item{InstanceID: "c-1", Agent: "claude", Run: 2}, Solved: true, ScoredAt: at.Add(time.Hour)})
	write("acme/empty")
	broken := filepath.Join(DirBeside(DefaultTasks(root, "acme/broken")), "results")
	if err := os.MkdirAll(broken, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(broken, "1.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := LatestAll(context.Background(), root, nil)
	if err == nil || !strings.Contains(err.Error(), "acme/broken") {
		t.Errorf("err %v, want acme/broken's eval named", err)
	}
	if len(got) != 2 || got[0].Repo != "acme/calc" || got[1].Repo != "zeta/app" || got[0].Runs != 2 || got[0].Agents[0].Solved != 1 ||
		!got[0].ScoredAt.Equal(at.Add(time.Hour)) {
		t.Fatalf("latest %+v", got)
	}
	if none, err := LatestAll(context.Background(), t.TempDir(), nil); err != nil || none != nil {
		t.Errorf("without evals: %v %v", none, err)
	}
}
