package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aceworks/ace/pkg/atomicfile"
)

// ace keeps its files out of commits with an exclude file of its own, .git/ace/exclude, named by the working
// copy's core.excludesFile — not .git/info/exclude: the agents' own file tools honour that one (gemini's
// read_file refuses "ignored" files, so it could not read ACE_TASK.md or .ace/memory/), while git alone reads
// core.excludesFile. That setting takes the place of the user's global excludes in this working copy, so
// their content is copied in first.

// aceExcludeFile is ace's exclude file in the working copy dir.
func aceExcludeFile(dir string) string { return filepath.Join(dir, ".git", "ace", "exclude") }

// legacyExcludeFile is where ace wrote its excludes before: a working copy made then is moved on its next
// exclude.
func legacyExcludeFile(dir string) string { return filepath.Join(dir, ".git", "info", "exclude") }

// writeExcludes adds patterns to ace's exclude file of the working copy and points its core.excludesFile at it
// (again: a moved working copy follows; ace's own git commands name the file themselves, whatever the agent
// made of that setting). Patterns ace had put in .git/info/exclude are taken out of it.
func (w *Workspace) writeExcludes(ctx context.Context, patterns []string) error {
	path := aceExcludeFile(w.Dir)
	if err := w.m.writeExcludeFile(ctx, path, patterns); err != nil {
		return err
	}
	if _, err := w.git(ctx, nil, "config", "core.excludesFile", path); err != nil {
		return err
	}
	return removeLines(legacyExcludeFile(w.Dir), append(slices.Clone(patterns), "# ace"))
}

// writeExcludeFile adds patterns to the exclude file at path, which starts as a copy of the user's global
// excludes.
func (m *Manager) writeExcludeFile(ctx context.Context, path string, patterns []string) error {
	old, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		old, err = m.userExcludes(ctx), nil
	}
	if err != nil {
		return err
	}
	if b, changed := withExcludes(old, patterns); changed || len(old) == 0 {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := atomicfile.Write(path, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// userExcludes is the content of the user's global exclude file (git's core.excludesFile, else
// $XDG_CONFIG_HOME/git/ignore), or nothing.
func (m *Manager) userExcludes(ctx context.Context) []byte {
	path, _ := m.git(ctx, "", "config", "--global", "--path", "core.excludesFile") // unset: exit 1
	if path == "" {
		if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
			path = filepath.Join(x, "git", "ignore")
		} else if h, err := os.UserHomeDir(); err == nil {
			path = filepath.Join(h, ".config", "git", "ignore")
		}
	}
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return nil
	}
	if !strings.HasSuffix(string(b), "\n") {
		b = append(b, '\n')
	}
	return append([]byte("# the user's global excludes (core.excludesFile), copied: this file takes their place here\n"), b...)
}

// removeLines takes the lines equal to one of lines (spaces trimmed) out of the file at path; a missing file
// is left missing.
func removeLines(path string, lines []string) error {
	old, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	all := strings.Split(string(old), "\n")
	kept := slices.DeleteFunc(slices.Clone(all), func(l string) bool { return slices.Contains(lines, strings.TrimSpace(l)) })
	if len(kept) == len(all) {
		return nil
	}
	return atomicfile.Write(path, []byte(strings.Join(kept, "\n")), 0o644)
}
