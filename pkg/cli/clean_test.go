package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tmuxops"
)

// TestCleanRemovesTheAttemptsOfAFinishedBestOf: ace clean removes the working copies (<issue>-<k>) of a best-of
// run's attempts once the run is done, whatever became of each attempt; those of a best-of run still working are
// kept, and those of one that failed only with --all.
func TestCleanRemovesTheAttemptsOfAFinishedBestOf(t *testing.T) {
	t.Parallel()
	cfg, _ := cleanConfig(t)
	root, ctx := cfg.Workspace.Root, context.Background()
	db, err := store.Open(ctx, filepath.Join(root, "ace.db"))
	if err != nil {
		t.Fatal(err)
	}
	copyDir := func(leaf string) string {
		dir := filepath.Join(root, "worktrees", "acme", "widgets", leaf)
		if err := os.MkdirAll(filepath.Join(dir, ".git"), 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	save := func(r *store.Run, status store.Status) {
		t.Helper()
		if err := db.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
		r.Status, r.Step = status, string(status)
		if err := db.UpdateRun(ctx, r, nil); err != nil {
			t.Fatal(err)
		}
	}
	// bestOf makes issue's best-of run with its attempts, each status of attempts one attempt's.
	bestOf := func(issue int, status store.Status, attempts ...store.Status) []string {
		p := &store.Run{Repo: "acme/widgets", Issue: issue, Attempt: 1, Agent: "claude", Runner: "tmux",
			State: store.RunState{BestOf: &store.BestOfState{N: len(attempts)}}}
		save(p, store.StatusActive)
		var dirs []string
		for i, st := range attempts {
			k := i + 1
			dir := copyDir(strconv.Itoa(issue) + "-" + strconv.Itoa(k))
			a := &store.Run{Repo: "acme/widgets", Issue: issue, Attempt: store.AttemptNumber(1, k), Agent: "codex", Runner: "tmux",
				Workdir: dir, State: store.RunState{AttemptOf: &store.AttemptState{Parent: p.ID, K: k}}}
			save(a, st)
			p.State.BestOf.Attempts = append(p.State.BestOf.Attempts, a.ID)
			dirs = append(dirs, dir)
		}
		p.Status, p.Step = status, string(status)
		if err := db.UpdateRun(ctx, p, nil); err != nil {
			t.Fatal(err)
		}
		return dirs
	}
	done := bestOf(5, store.StatusDone, store.StatusDone, store.StatusFailed)
	working := bestOf(6, store.StatusActive, store.StatusDone, store.StatusActive)
	failed := bestOf(7, store.StatusFailed, store.StatusDone)
	db.Close()

	var out bytes.Buffer
	app := &App{Config: cfg, Stdout: &out, Stderr: &out}
	exists := func(dir string) bool { _, err := os.Stat(dir); return err == nil }
	if err := runClean(ctx, app, cleanOptions{DryRun: true}); err != nil {
		t.Fatalf("ace clean -n: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "would remove "+done[0]+" (acme/widgets#5, best-of attempt 1, done)") || !exists(done[0]) {
		t.Errorf("ace clean -n:\n%s", out.String())
	}

	out.Reset()
	if err := runClean(ctx, app, cleanOptions{}); err != nil {
		t.Fatalf("ace clean: %v\n%s", err, out.String())
	}
	for _, dir := range done {
		if exists(dir) || !strings.Contains(out.String(), "removed "+dir+" ") {
			t.Errorf("the attempt's copy %s of a done best-of run is left:\n%s", dir, out.String())
		}
	}
	for _, dir := range append(append([]string{}, working...), failed...) {
		if !exists(dir) {
			t.Errorf("ace clean removed %s, of a best-of run that works on or failed", dir)
		}
	}

	out.Reset()
	if err := runClean(ctx, app, cleanOptions{All: true}); err != nil {
		t.Fatalf("ace clean --all: %v\n%s", err, out.String())
	}
	if exists(failed[0]) {
		t.Errorf("ace clean --all left %s, of a failed best-of run:\n%s", failed[0], out.String())
	}
	for _, dir := range working {
		if !exists(dir) {
			t.Errorf("ace clean --all removed %s, of a best-of run that works on", dir)
		}
	}
}

// cleanConfig is ace's configuration on a fresh root, with a tmux server of the test's own that ends with it.
func cleanConfig(t *testing.T) (*config.Config, *tmuxops.Client) {
	t.Helper()
	cfg := config.Default()
	cfg.Workspace.Root = t.TempDir()
	cfg.Tmux.Socket = fmt.Sprintf("ace-clean-test-%d-%d", os.Getpid(), time.Now().UnixNano()%1e6)
	tmux := tmuxops.New(cfg.Tmux.Socket)
	t.Cleanup(func() { _ = tmux.KillServer(context.Background()) })
	return cfg, tmux
}
