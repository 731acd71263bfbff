package eval

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aceworks/ace/internal/evaltest"
	"github.com/aceworks/ace/internal/gittest"
	"github.com/aceworks/ace/pkg/workspace"
)

// TestEvalCopyHoldsNothingAfterTheBase: the working copy an eval run's agent gets, made from a mirror that holds
// the whole history, holds the task's past and nothing else. Looked at as an attacker would — every ref and
// reflog, `git log --all`, the fix's commit and its blob asked for by id, every pack and loose object under the
// item's directory (its cut base and mirror included) — no object from after the base is there, no ref points
// past it, and the copy borrows from no mirror.
func TestEvalCopyHoldsNothingAfterTheBase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	w := evaltest.New(t, dir)
	mirror := filepath.Join(dir, "mirror.git")
	gittest.Run(t, dir, "clone", "-q", "--mirror", w.Remote, mirror)
	m := w.Merges[1] // "Add mul": history before it, and much after
	task := &Task{InstanceID: "acme__calc-x", Repo: evaltest.Repo, BaseCommit: m.Base}
	rw, err := NewRunWorkspaces(filepath.Join(dir, "eval"), mirror, "main",
		func(n int) (Item, *Task, error) { return Item{N: n, InstanceID: task.InstanceID}, task, nil }, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := rw.Prepare(ctx, workspace.Spec{Repo: evaltest.Repo, Issue: 1, RemoteURL: w.Remote, BaseBranch: "main", Branch: "ace/1-mul"})
	if err != nil {
		t.Fatal(err)
	}
	if head := gittest.Run(t, ws.Dir, "rev-parse", "HEAD"); head != m.Base || ws.BaseCommit != m.Base {
		t.Fatalf("the copy is at %s (recorded base %s), want the task's base %s", head, ws.BaseCommit, m.Base)
	}

	past := map[string]bool{}
	for _, l := range strings.Split(gittest.Run(t, mirror, "rev-list", "--objects", m.Base), "\n") {
		past[strings.Fields(l)[0]] = true
	}
	future := []string{m.Commit, gittest.Run(t, mirror, "rev-parse", "main"), gittest.Run(t, mirror, "rev-parse", m.Commit+":lib/mul.sh"),
		gittest.Run(t, mirror, "rev-parse", m.Commit+"^2")}
	for _, id := range future {
		if past[id] {
			t.Fatalf("%s is in the base's history: the test looks at the wrong commit", id)
		}
		cmd := exec.Command("git", "cat-file", "-p", id)
		cmd.Dir = ws.Dir
		if out, err := cmd.CombinedOutput(); err == nil {
			t.Errorf("git cat-file -p %s in the copy shows the future:\n%s", id, out)
		}
	}
	inPast := func(where, listing string) {
		t.Helper()
		for _, l := range strings.Split(strings.TrimSpace(listing), "\n") {
			if f := strings.Fields(l); len(f) > 0 && !past[f[0]] {
				t.Errorf("%s lists %s, which is not of the base's history", where, l)
			}
		}
	}
	inPast("git rev-list --all --reflog --objects", gittest.Run(t, ws.Dir, "rev-list", "--all", "--reflog", "--objects"))
	inPast("git log --all", gittest.Run(t, ws.Dir, "log", "--all", "--format=%H"))
	for _, repo := range []string{ws.Dir, rw.Remote(1)} {
		inPast("the refs of "+repo, gittest.Run(t, repo, "for-each-ref", "--format=%(objectname) %(refname)"))
	}
	if _, err := os.Stat(filepath.Join(ws.Dir, ".git", "objects", "info", "alternates")); !os.IsNotExist(err) {
		t.Errorf("the copy borrows objects (alternates): %v", err)
	}

	// Every object stored under the item's directory, packed or loose, whichever repository holds it.
	packs := 0
	err = filepath.WalkDir(rw.ItemDir(1), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if strings.HasSuffix(p, ".idx") {
			packs++
			var ids []string // verify-pack's object lines, not its summary
			for _, l := range strings.Split(gittest.Run(t, filepath.Dir(p), "verify-pack", "-v", p), "\n") {
				if f := strings.Fields(l); len(f) > 0 && workspace.IsCommitID(f[0]) {
					ids = append(ids, f[0])
				}
			}
			if len(ids) == 0 {
				t.Errorf("pack %s lists no object", p)
			}
			inPast("pack "+p, strings.Join(ids, "\n"))
		}
		if parent := filepath.Base(filepath.Dir(p)); len(parent) == 2 && filepath.Base(filepath.Dir(filepath.Dir(p))) == "objects" {
			inPast("loose object "+p, parent+d.Name())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if packs == 0 {
		t.Fatal("no pack under the item's directory: the walk looked in the wrong place")
	}
}
