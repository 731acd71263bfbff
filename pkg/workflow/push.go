package workflow

import (
	"context"
	"errors"
	"fmt"

	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workspace"
)

// errFenced refuses a push behind the fence.
var errFenced = errors.New("this host is cut off from the store: no step until it answers again")

// pushFenced pushes the run's branch only while this host holds the run: not behind the fence, and not when the
// store says the run has moved to another host or changed under it (the lease read right before the push), so
// that a host waking from a long pause cannot push over its successor's work.
func (e *Engine) pushFenced(ctx context.Context, r *store.Run, ws *workspace.Workspace) error {
	if e.jobs != nil && e.jobs.Fenced() {
		return errFenced
	}
	fresh, err := e.o.Store.GetRun(ctx, r.ID)
	if err != nil {
		return fmt.Errorf("check that this host still holds the run: %w", err)
	}
	if fresh.Host != "" && r.Host != "" && fresh.Host != r.Host {
		return fmt.Errorf("the run moved to host %s: this host does not push: %w", fresh.Host, store.ErrConflict)
	}
	if fresh.Version != r.Version {
		return fmt.Errorf("the run changed under this step: %w", store.ErrConflict)
	}
	return ws.Push(ctx)
}
