package memory

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/aceworks/ace/pkg/atomicfile"
	"github.com/aceworks/ace/pkg/workspace"
)

// header starts a repository's AGENTS.md when the first lines are merged into it.
const header = "# Notes for agents working on this repository (kept by ace: append one line per point)\n"

// Merged says what a merge did.
type Merged struct {
	Added int
	// Dropped lines would have taken AGENTS.md past its cap.
	Dropped int
	// Withheld lines held a secret value: memory is read by every later agent, of any kind.
	Withheld int
}

// Merge adds to repo's AGENTS.md the lines of edited (an agent's copy) that are neither in baseline (what the
// copy started as) nor already in the file, in their order. Lines are never removed or reordered: merging is
// append-only and idempotent, so concurrent and repeated merges keep every line exactly once.
// Lines that contain one of secrets (values of 4 bytes or more) are withheld.
func (s *Store) Merge(ctx context.Context, repo, baseline, edited string, secrets ...string) (Merged, error) {
	var m Merged
	seen := map[string]bool{}
	for _, l := range strings.Split(workspace.Sanitize(baseline), "\n") {
		seen[norm(l)] = true
	}
	var add []string
	for _, l := range strings.Split(workspace.Sanitize(edited), "\n") {
		l = strings.TrimRight(l, " \t")
		if strings.TrimSpace(l) == "" || seen[norm(l)] {
			continue
		}
		seen[norm(l)] = true
		if holdsSecret(l, secrets) {
			m.Withheld++
			continue
		}
		add = append(add, l)
	}
	if len(add) == 0 {
		return m, nil
	}
	err := s.locked(ctx, repo, func(dir string) error {
		path := filepath.Join(dir, AgentsFile)
		cur, err := readFile(path)
		if err != nil {
			return err
		}
		have := map[string]bool{}
		for _, l := range strings.Split(cur, "\n") {
			have[norm(l)] = true
		}
		if cur == "" {
			cur = header
		} else if !strings.HasSuffix(cur, "\n") {
			cur += "\n"
		}
		var b strings.Builder
		b.WriteString(cur)
		for _, l := range add {
			if have[norm(l)] {
				continue
			}
			if int64(b.Len()+len(l)+1) > s.o.AgentsMax {
				m.Dropped++
				continue
			}
			b.WriteString(l + "\n")
			have[norm(l)] = true
			m.Added++
		}
		if m.Added == 0 {
			return nil
		}
		if err := atomicfile.Write(path, []byte(b.String()), 0o600); err != nil {
			return fmt.Errorf("write AGENTS.md: %w", err)
		}
		return nil
	})
	return m, err
}

// norm is the form lines are compared in: trailing blanks do not make a line new.
func norm(l string) string { return strings.TrimRight(l, " \t\r") }

// holdsSecret reports whether line contains one of the values (those under 4 bytes are too common to tell).
func holdsSecret(line string, values []string) bool {
	for _, v := range values {
		if len(v) >= 4 && strings.Contains(line, v) {
			return true
		}
	}
	return false
}
