package workflow

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workspace"
)

// The done protocol's files, relative to the working copy (ACE_TASK.md tells the agent about them).
const (
	doneFile     = ".ace/DONE"
	questionFile = ".ace/QUESTION"
)

// leftWork reports whether the working copy holds work of the agent: commits ahead of the base, or changes.
func (e *Engine) leftWork(ctx context.Context, r *store.Run) (bool, error) {
	ws, err := e.o.Workspaces.Open(ctx, r.Repo, r.Issue)
	if err != nil {
		return false, fmt.Errorf("open working copy: %w", err)
	}
	ahead, err := ws.CommitsAhead(ctx)
	if err != nil {
		return false, fmt.Errorf("count commits: %w", err)
	}
	changed, err := ws.HasChanges(ctx)
	if err != nil {
		return false, fmt.Errorf("look for changes: %w", err)
	}
	return ahead > 0 || changed, nil
}

// readProtocolFile reads a done-protocol file of the working copy, sanitized like any agent output.
func readProtocolFile(workdir, rel string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(workdir, rel))
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(workspace.Sanitize(string(b))), true
}
