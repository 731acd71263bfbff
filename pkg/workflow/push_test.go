package workflow

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/aceworks/ace/pkg/store"
)

type fencedJobs struct{ fenced bool }

func (fencedJobs) Enqueue(context.Context, *store.Run) error    { return nil }
func (fencedJobs) Interrupt(context.Context, string, int) error { return nil }
func (j fencedJobs) Fenced() bool                               { return j.fenced }
func (fencedJobs) Dispatch(context.Context) error               { return nil }

// TestPushIsFenced: a host pushes a run's branch only while it holds the run — not behind its fence, not once
// the store says the run moved to another host, not when the run changed under the step. Each refusal comes
// before the working copy is touched (a nil one here).
func TestPushIsFenced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "ace.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r := &store.Run{Repo: "acme/widgets", Issue: 1, Attempt: 1, Agent: "codex", Step: "finalize",
		Status: store.StatusActive, Host: "alpha"}
	if err := st.CreateRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	e := withParts(&Engine{o: Options{Store: st}})

	e.UseJobs(fencedJobs{fenced: true})
	if err := e.pushFenced(ctx, r, nil); !errors.Is(err, errFenced) {
		t.Errorf("behind the fence: %v, want refused", err)
	}

	e.UseJobs(fencedJobs{})
	mine := *r
	moved := *r
	moved.Host = "beta"
	if err := st.UpdateRun(ctx, &moved, &store.Event{Kind: "moved"}); err != nil {
		t.Fatal(err)
	}
	if err := e.pushFenced(ctx, &mine, nil); !errors.Is(err, store.ErrConflict) {
		t.Errorf("after the run moved to beta: %v, want a conflict", err)
	}

	stale := moved
	stale.Version-- // this step read the run before beta's last write
	if err := e.pushFenced(ctx, &stale, nil); !errors.Is(err, store.ErrConflict) {
		t.Errorf("the run changed under the step: %v, want a conflict", err)
	}
}
