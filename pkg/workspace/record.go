package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/aceworks/ace/pkg/atomicfile"
)

// A working copy's .git is the agent's: it writes it as it likes, from its box. What ace needs to know about the
// copy — which repository it is of, where its branch is pushed, which branch, from which base — is ace's own
// record, written when ace made the copy and kept under ace's root, where no box sees it
// (<root>/records/<owner>/<repo>/<issue>.json for <root>/worktrees/<owner>/<repo>/<issue>). Nothing of it is ever
// read back from the copy.

// record is ace's account of one working copy.
type record struct {
	Repo       string `json:"repo"`
	Issue      int    `json:"issue"`
	RemoteURL  string `json:"remote_url"`
	BaseBranch string `json:"base_branch"`
	BaseCommit string `json:"base_commit"`
	Branch     string `json:"branch"`
}

// recordPath is where the record of the working copy dir (below <root>/worktrees) is kept.
func (m *Manager) recordPath(dir string) (string, error) {
	rel, err := filepath.Rel(filepath.Join(m.o.Root, "worktrees"), dir)
	if err != nil || strings.HasPrefix(rel, "..") {
		return "", fmt.Errorf("working copy %s is not below %s", dir, filepath.Join(m.o.Root, "worktrees"))
	}
	return m.under("records", rel+".json")
}

// writeRecord keeps rec as the record of the working copy dir, whole or not at all.
func (m *Manager) writeRecord(dir string, rec record) error {
	if err := rec.valid(); err != nil {
		return err
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	path, err := m.recordPath(dir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(path, append(b, '\n'), 0o600)
}

// readRecord is the record of the working copy dir; os.ErrNotExist when ace keeps none (a copy an older ace made).
func (m *Manager) readRecord(dir string) (record, error) {
	path, err := m.recordPath(dir)
	if err != nil {
		return record{}, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return record{}, err
	}
	var rec record
	if err := json.Unmarshal(b, &rec); err != nil {
		return record{}, fmt.Errorf("ace's record of the working copy %s: %w", dir, err)
	}
	if err := rec.valid(); err != nil {
		return record{}, fmt.Errorf("ace's record of the working copy %s: %w", dir, err)
	}
	return rec, nil
}

// valid checks what becomes an argument of git or of a push: refs and a commit that cannot pass for an option.
func (rec record) valid() error {
	switch {
	case rec.RemoteURL == "":
		return errors.New("no remote URL")
	case !validRef(rec.Branch):
		return fmt.Errorf("branch %q is not a branch name", rec.Branch)
	case !validRef(rec.BaseBranch):
		return fmt.Errorf("base branch %q is not a branch name", rec.BaseBranch)
	case !isHash(rec.BaseCommit):
		return fmt.Errorf("base commit %q is not a commit id", rec.BaseCommit)
	}
	return nil
}

var hashRe = regexp.MustCompile(`^(?:[0-9a-f]{40}|[0-9a-f]{64})$`)

// isHash reports whether s is a full object id in git's lower-case hex.
func isHash(s string) bool { return hashRe.MatchString(s) }

// validRef reports whether name is a branch name as git-check-ref-format(1) allows it, in the printable ASCII
// that ace's branches and GitHub's base branches use: never an option, a range, a reflog or a pattern.
func validRef(name string) bool {
	if name == "" || name == "@" || strings.HasPrefix(name, "-") || strings.HasPrefix(name, "/") ||
		strings.HasSuffix(name, "/") || strings.HasSuffix(name, ".") || strings.HasSuffix(name, ".lock") ||
		strings.Contains(name, "..") || strings.Contains(name, "//") || strings.Contains(name, "@{") ||
		strings.Contains(name, "/.") || strings.HasPrefix(name, ".") {
		return false
	}
	for _, r := range name {
		if r <= ' ' || r >= 0x7f || strings.ContainsRune(`~^:?*[\`, r) {
			return false
		}
	}
	return true
}

// adopt makes the record of a working copy an older ace made, which kept what the record holds in the copy's
// own configuration: the remote comes from the repository's mirror (ace's), the rest — base, base commit,
// branch — from the copy, each checked to be what it says (an agent could have changed them before this ace
// took over; from now on it cannot).
func (m *Manager) adopt(ctx context.Context, ws *Workspace) (record, error) {
	rec := record{Repo: ws.Repo, Issue: ws.Issue}
	mirror, err := m.mirrorPath(ws.Repo)
	if err != nil {
		return record{}, err
	}
	if rec.RemoteURL, err = m.git(ctx, "", "--git-dir", mirror, "config", "--get", "remote.origin.url"); err != nil {
		return record{}, fmt.Errorf("the remote of %s, from its mirror: %w", ws.Repo, err)
	}
	for _, q := range []struct {
		dst  *string
		args []string
	}{
		{&rec.BaseBranch, []string{"config", "--get", "ace.base"}},
		{&rec.BaseCommit, []string{"config", "--get", "ace.basecommit"}},
		{&rec.Branch, []string{"symbolic-ref", "-q", "--short", "HEAD"}},
	} {
		if *q.dst, err = ws.git(ctx, nil, q.args...); err != nil {
			return record{}, fmt.Errorf("working copy %s was not made by ace: %w", ws.Dir, err)
		}
	}
	if err := m.writeRecord(ws.Dir, rec); err != nil {
		return record{}, fmt.Errorf("working copy %s: %w", ws.Dir, err)
	}
	m.o.Logger.WarnContext(ctx, "adopted a working copy made by an older ace: its record comes from the copy itself, checked",
		"dir", ws.Dir, "branch", rec.Branch, "base", rec.BaseBranch)
	return rec, nil
}
