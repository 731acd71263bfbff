package workflow

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"

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

// attemptCopy is the run's working copy number (workspace.Spec.Copy): k for best-of attempt k, else 0.
func attemptCopy(r *store.Run) int {
	if a := r.State.AttemptOf; a != nil {
		return a.K
	}
	return 0
}

// attemptSuffix tells an attempt's session and logs from its parent's and its siblings': "-<k>", or "".
func attemptSuffix(r *store.Run) string {
	if k := attemptCopy(r); k > 0 {
		return "-" + strconv.Itoa(k)
	}
	return ""
}

// copyOf is the numbered working copy run r works in, 0 for the issue's own: an attempt's (<issue>-<k>), and a
// best-of parent's once it has chosen — the winner's, whose branch its pull request is and where the winner's
// agent kept its conversation, so that a round of the pull request reaches that agent in its copy.
func copyOf(r *store.Run) int {
	if k := attemptCopy(r); k > 0 {
		return k
	}
	if bo := r.State.BestOf; bo != nil {
		return bo.Winner
	}
	return 0
}

// The done protocol's files, relative to the working copy (ACE_TASK.md tells the agent about them).
const (
	doneFile     = ".ace/DONE"
	questionFile = ".ace/QUESTION"
	handoverFile = ".ace/HANDOVER.md" // what an agent that takes a run over reads first (handover.go)
)

// removeProtocolFile removes a done-protocol file of the working copy (the name: a link, never what it leads to).
func removeProtocolFile(r *store.Run, rel string) error {
	if err := workCopy(r).Remove(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", rel, err)
	}
	return nil
}
