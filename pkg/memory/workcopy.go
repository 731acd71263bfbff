package memory

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/aceworks/ace/pkg/atomicfile"
	"github.com/aceworks/ace/pkg/workspace"
)

// Where a working copy holds its copy of the memory: under .ace/, which ace already keeps out of git, so the
// memory's AGENTS.md can never collide with a repository's own (tracked) AGENTS.md at the top level.
const (
	CopyDir    = ".ace/memory"
	StatusCopy = CopyDir + "/" + StatusFile
	AgentsCopy = CopyDir + "/" + AgentsFile
	// baselineFile, under .git/, is AGENTS.md as it was copied in: only what the agent added to it is merged
	// back. It sits where the agent does not look (and codex's sandbox cannot write).
	baselineFile = "ace-memory-baseline.md"
)

// CopyIn puts repo's memory into the working copy at workdir (sanitized and capped) and records the baseline.
// What an earlier attempt in the same working copy added and did not get merged is merged first, so reusing a
// working copy never loses an agent's lines.
func (s *Store) CopyIn(ctx context.Context, repo, workdir string, secrets ...string) (Merged, error) {
	rescued, err := s.MergeBack(ctx, repo, workdir, secrets...)
	if err != nil {
		return rescued, err
	}
	f, err := s.Read(ctx, repo)
	if err != nil {
		return rescued, err
	}
	_, status := splitNewest(ensureNewline(workspace.Sanitize(f.Status)), s.o.StatusMax)
	agents := headWithin(ensureNewline(workspace.Sanitize(f.Agents)), s.o.AgentsMax)
	if err := os.MkdirAll(filepath.Join(workdir, CopyDir), 0o755); err != nil {
		return rescued, fmt.Errorf("create %s: %w", CopyDir, err)
	}
	for rel, text := range map[string]string{StatusCopy: status, AgentsCopy: agents} {
		if err := atomicfile.Write(filepath.Join(workdir, rel), []byte(text), 0o644); err != nil {
			return rescued, fmt.Errorf("copy memory into the working copy: %w", err)
		}
	}
	if err := atomicfile.Write(baselinePath(workdir), []byte(agents), 0o600); err != nil {
		return rescued, fmt.Errorf("record the memory baseline: %w", err)
	}
	return rescued, nil
}

// MergeBack merges what the agent added to the working copy's AGENTS.md into repo's memory, withholding lines
// that hold one of secrets. It may be called any number of times: the baseline moves on to what was merged.
func (s *Store) MergeBack(ctx context.Context, repo, workdir string, secrets ...string) (Merged, error) {
	edited, err := readFile(filepath.Join(workdir, AgentsCopy))
	if err != nil || edited == "" {
		return Merged{}, err
	}
	base, err := readFile(baselinePath(workdir))
	if err != nil {
		return Merged{}, err
	}
	m, err := s.Merge(ctx, repo, base, edited, secrets...)
	if err != nil {
		return m, err
	}
	if err := atomicfile.Write(baselinePath(workdir), []byte(edited), 0o600); err != nil && !errors.Is(err, os.ErrNotExist) {
		return m, fmt.Errorf("record the memory baseline: %w", err)
	}
	return m, nil
}

func baselinePath(workdir string) string { return filepath.Join(workdir, ".git", baselineFile) }

func ensureNewline(s string) string {
	if s != "" && !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return s
}

// headWithin keeps the whole lines of text that fit in max bytes, oldest first.
func headWithin(text string, max int64) string {
	if int64(len(text)) <= max {
		return text
	}
	cut := strings.LastIndex(text[:max], "\n")
	return text[:cut+1]
}
