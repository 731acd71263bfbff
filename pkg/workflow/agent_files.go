package workflow

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/untrusted"
)

// Everything in a run's working copy (.git included) and its agent's home is the agent's: ace reads and writes
// there through package untrusted alone — never following a link out of the tree, reading regular files of one
// name within a cap, replacing rather than writing through what is there. A refusal is recorded here (an event
// once per file and finding, a row of the status comment, a line of ace show) and the run goes on without the
// file's content; a file ace must write and cannot is the step's terminal error.

// Caps of what ace reads from a working copy or home, per use.
const (
	// protocolMax bounds .ace/DONE and .ace/QUESTION: a summary or a question, never a document.
	protocolMax = 64 << 10
	// contextFileMax bounds a context file (CLAUDE.md …) ace reads to tell its own pointer from the agent's file.
	contextFileMax = 1 << 20
	// maxRefused bounds the refusals a run records (events, the status comment, ace show); the log has the rest.
	maxRefused = 50
)

// workCopy is the run's working copy as a tree the agent controls.
func workCopy(r *store.Run) untrusted.Tree { return untrusted.New(r.Workdir) }

// hasWorkCopy reports whether the run's working copy is on this host. A run moved here from another host has
// none (MoveRun) until prepare_workspace makes one from its pushed branch — a followed pull request's at its next
// round (startAfresh). The directory is ace's (the agent writes beneath it), so looking at it is safe.
func hasWorkCopy(r *store.Run) bool {
	if r.Workdir == "" {
		return false
	}
	fi, err := os.Lstat(r.Workdir)
	return err == nil && fi.IsDir()
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

// RefusedLine says which files of the run's working copy or home ace refused, for ace show and the dashboard.
func RefusedLine(r *store.Run) string {
	return strings.Join(r.State.Refused, "; ")
}
