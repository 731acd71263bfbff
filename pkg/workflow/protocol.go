package workflow

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workspace"
)

// The done protocol's files, relative to the working copy (ACE_TASK.md tells the agent about them).
const (
	doneFile     = ".ace/DONE"
	questionFile = ".ace/QUESTION"
	handoverFile = ".ace/HANDOVER.md" // what an agent that takes a run over reads first (handover.go)
)

// leftWork reports whether the working copy holds work of the agent: commits ahead of the base, or changes.
func (e *Engine) leftWork(ctx context.Context, r *store.Run) (bool, error) {
	ws, err := e.openWork(ctx, r)
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

// readProtocolFile reads a done-protocol file of the working copy, sanitized like any agent output; ok when
// something is there. A file ace refuses (agent_files.go) is there: its text is what ace found instead, so
// that a refused .ace/DONE still ends the work (the summary says what ace refused) and a refused
// .ace/QUESTION still reaches a human — never its content, never a wait on it.
func (e *Engine) readProtocolFile(ctx context.Context, r *store.Run, rel string) (text string, ok bool) {
	b, err := workCopy(r).ReadFile(rel, protocolMax)
	switch {
	case err == nil:
		return strings.TrimSpace(workspace.Sanitize(string(b))), true
	case errors.Is(err, fs.ErrNotExist):
		return "", false
	case e.noteRefusal(ctx, r, err):
		return "(ace did not read " + rel + ": " + err.Error() + ")", true
	}
	e.log.WarnContext(ctx, "read a done-protocol file", "run", r.ID, "file", rel, "err", err)
	return "", false
}

// removeProtocolFile removes a done-protocol file of the working copy (the name: a link, never what it leads to).
func removeProtocolFile(r *store.Run, rel string) error {
	if err := workCopy(r).Remove(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", rel, err)
	}
	return nil
}
