package workflow

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/aceworks/ace/pkg/sanitize"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/untrusted"
	"github.com/aceworks/ace/pkg/workspace"
)

// The engine's side of the run's working copy: which one to open (the issue's own or a best-of copy, copyOf),
// whether the agent left work there, what it wrote of the done protocol, and what becomes of a file ace refuses
// or cannot do without. agent_files.go says how ace treats the agent's files and names the done protocol's.

// copyOpener is the Workspaces that hold numbered copies of an issue beside its own (workspace.Manager).
type copyOpener interface {
	OpenCopy(ctx context.Context, repo string, issue, k int) (*workspace.Workspace, error)
}

// copyRemover is the Workspaces that can delete a numbered copy (workspace.Manager).
type copyRemover interface {
	RemoveCopy(ctx context.Context, repo string, issue, k int) error
}

// removeWork deletes the run's working copy (copyOf's); removed is false when these Workspaces delete none.
func (e *Engine) removeWork(ctx context.Context, r *store.Run) (removed bool, err error) {
	if k := copyOf(r); k > 0 {
		if rm, ok := e.o.Workspaces.(copyRemover); ok {
			return true, rm.RemoveCopy(ctx, r.Repo, r.Issue, k)
		}
		return false, nil
	}
	if rm, ok := e.o.Workspaces.(workspaceRemover); ok {
		return true, rm.Remove(ctx, r.Repo, r.Issue)
	}
	return false, nil
}

// openWork opens the run's working copy: the issue's own, or copyOf's.
func (e *Engine) openWork(ctx context.Context, r *store.Run) (*workspace.Workspace, error) {
	k := copyOf(r)
	if k == 0 {
		return e.o.Workspaces.Open(ctx, r.Repo, r.Issue)
	}
	co, ok := e.o.Workspaces.(copyOpener)
	if !ok {
		return nil, Terminalf("best-of attempt %d: these working copies hold one per issue", k)
	}
	return co.OpenCopy(ctx, r.Repo, r.Issue, k)
}

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
		return strings.TrimSpace(sanitize.Clean(string(b))), true
	case errors.Is(err, fs.ErrNotExist):
		return "", false
	case e.noteRefusal(ctx, r, err):
		return "(ace did not read " + rel + ": " + err.Error() + ")", true
	}
	e.log.WarnContext(ctx, "read a done-protocol file", "run", r.ID, "file", rel, "err", err)
	return "", false
}

// noteRefusal records err when it is (or wraps) a refusal, once per file and finding, and reports whether it
// was one.
func (e *Engine) noteRefusal(ctx context.Context, r *store.Run, err error) bool {
	ref, ok := untrusted.IsRefusal(err)
	if !ok {
		return false
	}
	line := ref.Error()
	if slices.Contains(r.State.Refused, line) {
		return true
	}
	e.log.WarnContext(ctx, "refused a file the agent controls", "run", r.ID, "refusal", line)
	if len(r.State.Refused) >= maxRefused {
		return true // the log has it; the run's record is bounded (an agent can leave any number)
	}
	r.State.Refused = append(slices.Clone(r.State.Refused), line)
	e.event(ctx, r, EventFileRefused, line)
	return true
}

// needFile is the error of a file of the working copy or home the run cannot go on without (one ace must write,
// the live transcript): a refusal is recorded and ends the run — the agent put something there on purpose —
// anything else is returned for the retry.
func (e *Engine) needFile(ctx context.Context, r *store.Run, what string, err error) error {
	if err == nil {
		return nil
	}
	err = fmt.Errorf("%s: %w", what, err)
	if e.noteRefusal(ctx, r, err) {
		return Terminal(err)
	}
	return err
}
