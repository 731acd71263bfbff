package workflow

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/store"
)

// Long sessions fill an agent's context. The pane transcript (<root>/logs/<session>.log) grows with everything
// the agent shows, so its growth since the last compaction is a cheap, agent-independent measure of how much
// the context has taken in. The offset lives in the run's state: the count survives a restart of ace.

// compactIfDue asks an idle agent to compact its context with its own command when its transcript grew past
// monitor.compact_threshold since the last compaction, and reports whether it did. A failure is logged and not
// fatal: the next idle moment tries again.
func (e *Engine) compactIfDue(ctx context.Context, r *store.Run, prof agents.Profile, st agents.State) bool {
	threshold := e.cfg.Monitor.CompactThreshold
	if threshold <= 0 || prof.CompactCommand == "" || st != agents.StateReady {
		return false
	}
	size, err := e.transcriptSize(r)
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
	offset := r.State.CompactAt
	if !agents.CompactDue(size, offset, threshold, st) {
		return false
	}
	if err := e.type_(ctx, r, prof.CompactCommand); err != nil {
		e.log.WarnContext(ctx, "compact", "run", r.ID, "session", r.Session, "err", err)
		return false
	}
	r.State.CompactAt, r.State.HasCompactAt = size, true
	r.State.Compacting = true
	e.event(ctx, r, "compact", fmt.Sprintf("asked the agent to compact its context (%s): its transcript grew %d KiB",
		prof.CompactCommand, agents.Growth(size, offset)>>10))
	return true
}

// execCompaction is compaction for a headless run, whose idle moment is the end of a turn: when the JSONL
// transcript grew past the threshold, the next turn of the conversation is the agent's compact command. When
// that turn has ended the run is idle as after any turn: the nudge that follows counts against max_nudges, so an
// agent whose every turn outgrows the threshold cannot loop between compacting and continuing. It reports
// whether it started a turn.
func (e *Engine) execCompaction(ctx context.Context, r *store.Run) (bool, error) {
	size, _ := fileSize(r.State.Transcript) // unreadable: counted as empty, so no compaction is asked for
	if r.State.Compacting {
		r.State.Compacting = false
		r.State.CompactAt, r.State.HasCompactAt = size, true // the compaction's own output does not count
		e.event(ctx, r, "compact", "the agent compacted its context")
		return false, nil
	}
	prof, err := e.profile(r)
	if err != nil || prof.CompactCommand == "" {
		return false, err
	}
	offset := r.State.CompactAt // none yet (0): the transcript started with the run
	if !agents.CompactDue(size, offset, e.cfg.Monitor.CompactThreshold, agents.StateReady) {
		return false, nil
	}
	if err := e.execTurn(ctx, r, prof.CompactCommand); err != nil {
		return false, err
	}
	r.State.Compacting = true
	e.event(ctx, r, "compact", fmt.Sprintf("asked the agent to compact its context (%s): its transcript grew %d KiB",
		prof.CompactCommand, agents.Growth(size, offset)>>10))
	return true, nil
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

// markTranscript starts the compaction count at the transcript's current size: a new or restarted agent has an
// empty context, whatever an earlier agent in the same session wrote to the transcript.
func (e *Engine) markTranscript(r *store.Run) {
	r.State.Compacting = false
	if size, err := e.transcriptSize(r); err == nil {
		r.State.CompactAt, r.State.HasCompactAt = size, true
	}
}

func (e *Engine) transcriptSize(r *store.Run) (int64, error) {
	return fileSize(e.transcriptPath(r.Session))
}

// transcriptPath is where tmux pipes a session's output (the LogPath sessionSpec gives tmux).
func (e *Engine) transcriptPath(session string) string {
	return filepath.Join(e.o.Root, "logs", session+".log")
}
