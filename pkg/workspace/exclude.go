package workspace

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aceworks/ace/pkg/untrusted"
)

// ace keeps its files out of commits with an exclude file of its own, .git/ace/exclude, named by the working
// copy's core.excludesFile — not .git/info/exclude: the agents' own file tools honour that one (gemini's
// read_file refuses "ignored" files, so it could not read ACE_TASK.md or .ace/memory/), while git alone reads
// core.excludesFile. That setting takes the place of the user's global excludes in this working copy, so
// their content is copied in first.

// aceExclude is ace's exclude file, in the working copy.
const aceExclude = ".git/ace/exclude"

// legacyExclude is where ace wrote its excludes before: a working copy made then is moved on its next exclude.
const legacyExclude = ".git/info/exclude"

// excludeMax bounds an exclude file ace reads back from a working copy (the agent can write it): patterns, not
// data.
const excludeMax = 1 << 20

// legacyExcludeFile is the legacy exclude file of the working copy dir.
func legacyExcludeFile(dir string) string { return untrusted.New(dir).Path(legacyExclude) }

// aceExcludeFile is ace's exclude file in the working copy dir.
func aceExcludeFile(dir string) string { return untrusted.New(dir).Path(aceExclude) }

// writeExcludes adds patterns to ace's exclude file of the working copy and points its core.excludesFile at it
// (again: a moved working copy follows; ace's own git commands name the file themselves, whatever the agent
// made of that setting). Patterns ace had put in .git/info/exclude are taken out of it.
func (w *Workspace) writeExcludes(ctx context.Context, patterns []string) error {
	if err := w.m.writeExcludeFile(ctx, w.Dir, patterns); err != nil {
		return err
	}
	if _, err := w.git(ctx, nil, "config", "core.excludesFile", aceExcludeFile(w.Dir)); err != nil {
		return err
	}
	return removeLines(untrusted.New(w.Dir), legacyExclude, append(slices.Clone(patterns), "# ace"))
}

// writeExcludeFile adds patterns to ace's exclude file of the working copy dir, which starts as a copy of the
// user's global excludes. The agent can write the file: it is read and written as untrusted.
func (m *Manager) writeExcludeFile(ctx context.Context, dir string, patterns []string) error {
	wc := untrusted.New(dir)
	old, err := wc.ReadFile(aceExclude, excludeMax)
	if errors.Is(err, fs.ErrNotExist) {
		old, err = m.userExcludes(ctx), nil
	}
	if err != nil {
		return err
	}
	if b, changed := withExcludes(old, patterns); changed || len(old) == 0 {
		if err := wc.MkdirAll(path.Dir(aceExclude), 0o755); err != nil {
			return err
		}
		if err := wc.WriteFile(aceExclude, b, 0o644); err != nil {
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

// removeLines takes the lines equal to one of lines (spaces trimmed) out of the file rel of the working copy
// wc; a missing file is left missing.
func removeLines(wc untrusted.Tree, rel string, lines []string) error {
	old, err := wc.ReadFile(rel, excludeMax)
	if errors.Is(err, fs.ErrNotExist) {
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
	return wc.WriteFile(rel, []byte(strings.Join(kept, "\n")), 0o644)
}
