package memory

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/atomicfile"
	"github.com/aceworks/ace/pkg/workspace"
)

// Entry is one finished run as status.md records it.
type Entry struct {
	Time    time.Time
	Issue   int
	Agent   string
	Outcome string // done, failed, cancelled
	// Detail is the pull request URL of a done run, else the reason it ended.
	Detail string
}

// maxDetail bounds the reason on a status line: the line is a summary, the run's record has the rest.
const maxDetail = 300

// Line renders the entry as one Markdown list item. Every field is sanitized and flattened, because a reason
// can quote the agent or the issue.
func (e Entry) Line() string {
	detail := flat(e.Detail)
	if r := []rune(detail); len(r) > maxDetail {
		detail = string(r[:maxDetail]) + "…"
	}
	line := fmt.Sprintf("- %s · #%d · %s · %s", e.Time.UTC().Format(time.RFC3339), e.Issue, flat(e.Agent), flat(e.Outcome))
	if detail != "" {
		line += " · " + detail
	}
	return line
}

func flat(s string) string { return strings.Join(strings.Fields(workspace.Sanitize(s)), " ") }

// Record appends e to repo's status.md. When the line would take the file past its cap, the oldest lines move
// to status.md.1 (replacing what it held), so that status.md keeps the newest half of the cap; the two files
// together never pass twice the cap.
func (s *Store) Record(ctx context.Context, repo string, e Entry) error {
	line := e.Line() + "\n"
	return s.locked(ctx, repo, func(dir string) error {
		path := filepath.Join(dir, StatusFile)
		cur, err := readFile(path)
		if err != nil {
			return err
		}
		if cur != "" && !strings.HasSuffix(cur, "\n") {
			cur += "\n"
		}
		if int64(len(cur)+len(line)) > s.o.StatusMax {
			old, kept := splitNewest(cur, s.o.StatusMax/2-int64(len(line)))
			if old != "" {
				if err := atomicfile.Write(filepath.Join(dir, RotatedFile), []byte(old), 0o600); err != nil {
					return fmt.Errorf("rotate status.md: %w", err)
				}
			}
			cur = kept
		}
		if err := atomicfile.Write(path, []byte(cur+line), 0o600); err != nil {
			return fmt.Errorf("write status.md: %w", err)
		}
		return nil
	})
}

// splitNewest splits text (whole lines) into the oldest lines and the newest ones that fit in budget bytes.
func splitNewest(text string, budget int64) (older, newest string) {
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	i, size := len(lines), int64(0)
	for i > 0 && size+int64(len(lines[i-1])) <= budget {
		i--
		size += int64(len(lines[i]))
	}
	return strings.Join(lines[:i], ""), strings.Join(lines[i:], "")
}
