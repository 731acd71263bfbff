package memory

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/aceworks/ace/pkg/untrusted"
	"github.com/aceworks/ace/pkg/workspace"
)

// Where a working copy holds its copy of the memory: under .ace/, which ace already keeps out of git, so the
// memory's AGENTS.md can never collide with a repository's own (tracked) AGENTS.md at the top level.
const (
	CopyDir    = ".ace/memory"
	StatusCopy = CopyDir + "/" + StatusFile
	AgentsCopy = CopyDir + "/" + AgentsFile
	// baseline, under .git/, is AGENTS.md as it was copied in: only what the agent added to it is merged back.
	// It sits where the agent does not look (and codex's sandbox cannot write).
	baseline = ".git/ace-memory-baseline.md"
)

// CopyIn puts repo's memory into the working copy at workdir (sanitized and capped) and records the baseline.
// What an earlier attempt in the same working copy added and did not get merged is merged first, so reusing a
// working copy never loses an agent's lines. The working copy is the agent's (package untrusted): a copy ace
// refuses to read back is not merged, and the error returned says so (an untrusted.Refusal) once the memory
// is copied in all the same.
func (s *Store) CopyIn(ctx context.Context, repo, workdir string, secrets ...string) (Merged, error) {
	rescued, refused := s.MergeBack(ctx, repo, workdir, secrets...)
	if _, ok := untrusted.IsRefusal(refused); refused != nil && !ok {
		return rescued, refused
	}
	f, err := s.Read(ctx, repo)
	if err != nil {
		return rescued, err
	}
	_, status := splitNewest(ensureNewline(workspace.Sanitize(f.Status)), s.o.StatusMax)
	agents := headWithin(ensureNewline(workspace.Sanitize(f.Agents)), s.o.AgentsMax)
	wc := untrusted.New(workdir)
	if err := wc.MkdirAll(CopyDir, 0o755); err != nil {
		return rescued, fmt.Errorf("create %s: %w", CopyDir, err)
	}
	for rel, text := range map[string]string{StatusCopy: status, AgentsCopy: agents} {
		if err := wc.WriteFile(rel, []byte(text), 0o644); err != nil {
			return rescued, fmt.Errorf("copy memory into the working copy: %w", err)
		}
	}
	if err := wc.WriteFile(baseline, []byte(agents), 0o600); err != nil {
		return rescued, fmt.Errorf("record the memory baseline: %w", err)
	}
	return rescued, refused
}

// MergeBack merges what the agent added to the working copy's AGENTS.md into repo's memory, withholding lines
// that hold one of secrets. It may be called any number of times: the baseline moves on to what was merged.
// Both files are the agent's to write: each is read beneath the working copy, a regular file within the
// repository's cap and a run's additions, or refused (an untrusted.Refusal).
func (s *Store) MergeBack(ctx context.Context, repo, workdir string, secrets ...string) (Merged, error) {
	wc := untrusted.New(workdir)
	edited, err := s.readCopy(wc, AgentsCopy)
	if err != nil || edited == "" {
		return Merged{}, err
	}
	base, err := s.readCopy(wc, baseline)
	if err != nil {
		return Merged{}, err
	}
	m, err := s.Merge(ctx, repo, base, edited, secrets...)
	if err != nil {
		return m, err
	}
	if err := wc.WriteFile(baseline, []byte(edited), 0o600); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return m, fmt.Errorf("record the memory baseline: %w", err)
	}
	return m, nil
}

// readCopy reads a memory file of the working copy wc: missing is empty. Its cap is the repository's cap and a
// megabyte a run may add (what passes the cap is dropped at the merge, counted).
func (s *Store) readCopy(wc untrusted.Tree, rel string) (string, error) {
	b, err := wc.ReadFile(rel, s.o.AgentsMax+1<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", rel, err)
	}
	return string(b), nil
}

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
