package workflow

import (
	"context"
	"fmt"
	"os"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/transcript"
)

// Long sessions fill an agent's context. The pane transcript (<root>/logs/<session>.log) grows with everything
// the agent shows, so its growth since the last compaction is a cheap, agent-independent measure of how much
// the context has taken in. The offset lives in the run's state: the count survives a restart of ace.

// compactDue reports whether an idle agent is to compact its context with its own command: its transcript grew
// past monitor.compact_threshold since the last compaction. The monitor decides it; the tell_agent step types the
// command (compact).
func (t *tmuxRunner) compactDue(r *store.Run, prof agents.Profile, st agents.State) bool {
	threshold := t.cfg.Monitor.CompactThreshold
	if threshold <= 0 || prof.CompactCommand == "" || st != agents.StateReady {
		return false
	}
	size, err := t.transcriptSize(r)
	if err != nil {
		return false
	}
	if !r.State.HasCompactAt || r.State.Compacting {
		// A run from before compaction existed, or the agent is back at its prompt after compacting: count from
		// here, so that what the compaction itself printed never calls for another one.
		r.State.CompactAt, r.State.HasCompactAt = size, true
		r.State.Compacting = false
		return false
	}
	return agents.CompactDue(size, r.State.CompactAt, threshold, st)
}

// compact types the agent's compaction command (the tell_agent step, after compactDue). A failure is logged and
// not fatal: the next idle moment tries again.
func (t *tmuxRunner) compact(ctx context.Context, r *store.Run, prof agents.Profile) {
	size, err := t.transcriptSize(r)
	if err != nil {
		return
	}
	offset := r.State.CompactAt
	if err := t.type_(ctx, r, prof.CompactCommand); err != nil {
		t.log.WarnContext(ctx, "compact", "run", r.ID, "session", r.Session, "err", err)
		return
	}
	r.State.CompactAt, r.State.HasCompactAt = size, true
	r.State.Compacting = true
	t.core.event(ctx, r, "compact", fmt.Sprintf("asked the agent to compact its context (%s): its transcript grew %d KiB",
		prof.CompactCommand, agents.Growth(size, offset)>>10))
}

// markTranscript starts the compaction count at the transcript's current size: a new or restarted agent has an
// empty context, whatever an earlier agent in the same session wrote to the transcript.
func (t *tmuxRunner) markTranscript(r *store.Run) {
	r.State.Compacting = false
	if size, err := t.transcriptSize(r); err == nil {
		r.State.CompactAt, r.State.HasCompactAt = size, true
	}
}

func (t *tmuxRunner) transcriptSize(r *store.Run) (int64, error) {
	return fileSize(transcript.TerminalLog(t.root, r.Session))
}

// fileSize is the size of the file at path; 0 when there is none (yet).
func fileSize(path string) (int64, error) {
	if path == "" {
		return 0, nil
	}
	fi, err := os.Stat(path)
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}
