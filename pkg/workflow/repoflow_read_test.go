package workflow

import (
	"context"
	"os"
	"testing"

	"github.com/aceworks/ace/internal/gittest"
)

// A commit's workflow file is read from git once: later reads of the same commit are answered without the mirror
// (gone here, so that only the cache can answer), and a commit without the file is remembered as such too.
func TestWorkflowFileReadOncePerCommit(t *testing.T) {
	ctx := context.Background()
	mirror := gittest.BareRepo(t, t.TempDir(), "widgets", map[string]string{".ace/workflow.toml": "verify = \"true\"\n"})
	bare := gittest.BareRepo(t, t.TempDir(), "plain", nil)
	with := gittest.Run(t, mirror, "rev-parse", "main")
	without := gittest.Run(t, bare, "rev-parse", "main")

	var c fileCache
	for range 2 {
		data, found, err := c.readAt(ctx, mirror, with, ".ace/workflow.toml")
		if err != nil || !found || string(data) != "verify = \"true\"\n" {
			t.Fatalf("read = %q, %v, %v; want the file", data, found, err)
		}
		if _, found, err := c.readAt(ctx, bare, without, ".ace/workflow.toml"); err != nil || found {
			t.Fatalf("read of a commit without the file = %v, %v; want not found", found, err)
		}
		for _, dir := range []string{mirror, bare} {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A name is not a commit's hash: it is read each time (and fails now that the mirror is gone).
	if _, _, err := c.readAt(ctx, mirror, "main", ".ace/workflow.toml"); err == nil {
		t.Fatal("a read by branch name was answered from the cache")
	}
}

// An error is not kept: once the commit is there, the next read finds it.
func TestWorkflowFileReadErrorNotKept(t *testing.T) {
	ctx := context.Background()
	parent := t.TempDir()
	mirror := gittest.BareRepo(t, parent, "widgets", map[string]string{".ace/workflow.toml": "verify = \"true\"\n"})
	rev := gittest.Run(t, mirror, "rev-parse", "main")
	other := gittest.BareRepo(t, parent, "other", nil)

	var c fileCache
	if _, _, err := c.readAt(ctx, other, rev, ".ace/workflow.toml"); err == nil {
		t.Fatal("a commit the repository lacks was read")
	}
	gittest.Run(t, other, "fetch", "-q", mirror, "main:refs/heads/imported")
	if data, found, err := c.readAt(ctx, other, rev, ".ace/workflow.toml"); err != nil || !found || len(data) == 0 {
		t.Fatalf("read after the fetch = %q, %v, %v; want the file", data, found, err)
	}
}
