// Package memory is a repository's durable memory across ace runs: under <root>/memory/<owner>/<repo>/,
// status.md is an append-only log written by ace (one line per finished run) and AGENTS.md holds conventions
// and gotchas that agents append to. Each run gets its own working copy, so without it every agent would start
// from nothing; with it, an agent reads what earlier runs on the same repository tried and learned.
//
// Writers on one repository take a file lock on its memory folder (processes) and merge by line (goroutines
// and processes alike), so concurrent runs never lose each other's lines. The text is untrusted, like an issue
// body: it is sanitized on the way into a working copy and on the way back, and both files are capped.
package memory

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/atomicfile"
	"github.com/gofrs/flock"
)

// The files of a repository's memory.
const (
	StatusFile = "status.md"
	// RotatedFile receives the oldest lines of status.md when it passes its cap.
	RotatedFile = "status.md.1"
	AgentsFile  = "AGENTS.md"
	lockFile    = ".lock"
)

// Default caps, in bytes.
const (
	DefaultAgentsMax = 64 << 10
	DefaultStatusMax = 256 << 10
)

// Options bound the memory files.
type Options struct {
	// AgentsMax caps AGENTS.md: lines that would pass it are not merged (a human trims it with `ace memory edit`).
	AgentsMax int64
	// StatusMax caps status.md: when a new line would pass it, the oldest lines move to status.md.1.
	StatusMax int64
}

// Store keeps the memories of every repository under one folder.
type Store struct {
	dir string
	o   Options
}

// New returns the memory kept under <root>/memory.
func New(root string, o Options) (*Store, error) {
	if root == "" {
		return nil, errors.New("memory: empty root")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("memory root %s: %w", root, err)
	}
	if o.AgentsMax <= 0 {
		o.AgentsMax = DefaultAgentsMax
	}
	if o.StatusMax <= 0 {
		o.StatusMax = DefaultStatusMax
	}
	return &Store{dir: filepath.Join(abs, "memory"), o: o}, nil
}

var nameRe = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// Dir is the memory folder of repo ("owner/name"); the name is checked before it becomes a path.
func (s *Store) Dir(repo string) (string, error) {
	owner, name, ok := strings.Cut(repo, "/")
	for _, p := range []string{owner, name} {
		if !ok || !nameRe.MatchString(p) || p == "." || p == ".." {
			return "", fmt.Errorf("repository %q: want owner/name of letters, digits, '.', '_' and '-'", repo)
		}
	}
	return filepath.Join(s.dir, owner, name), nil
}

// Files is what a repository's memory holds.
type Files struct {
	Status  string
	Agents  string
	Rotated string
}

// Read returns repo's memory; missing files read as empty.
func (s *Store) Read(ctx context.Context, repo string) (Files, error) {
	var f Files
	err := s.locked(ctx, repo, func(dir string) error {
		var err error
		if f.Status, err = readFile(filepath.Join(dir, StatusFile)); err != nil {
			return err
		}
		if f.Rotated, err = readFile(filepath.Join(dir, RotatedFile)); err != nil {
			return err
		}
		f.Agents, err = readFile(filepath.Join(dir, AgentsFile))
		return err
	})
	return f, err
}

// Clear removes repo's memory files.
func (s *Store) Clear(ctx context.Context, repo string) error {
	return s.locked(ctx, repo, func(dir string) error {
		for _, name := range []string{StatusFile, RotatedFile, AgentsFile} {
			if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("clear memory: %w", err)
			}
		}
		return nil
	})
}

// locked runs fn with repo's memory folder created and locked. Every call opens its own lock file, so the lock
// excludes goroutines of this process as well as other processes (flock locks belong to the open file).
func (s *Store) locked(ctx context.Context, repo string, fn func(dir string) error) error {
	dir, err := s.Dir(repo)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create memory folder: %w", err)
	}
	lock := flock.New(filepath.Join(dir, lockFile))
	ok, err := lock.TryLockContext(ctx, 20*time.Millisecond)
	if err != nil || !ok {
		return fmt.Errorf("lock memory of %s: %w", repo, errors.Join(err, ctx.Err()))
	}
	defer lock.Unlock()
	return fn(dir)
}

func readFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return string(b), nil
}

// AgentsPath is where repo's AGENTS.md lives (it may not exist yet).
func (s *Store) AgentsPath(repo string) (string, error) {
	dir, err := s.Dir(repo)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, AgentsFile), nil
}

// Replace writes edited as repo's AGENTS.md, a human's edit of original. Lines that runs merged while the human
// was editing (in the file now, not in original, not in edited) are kept after the edit: an editor left open must
// neither block runs (the lock is not held while editing) nor drop what they added meanwhile.
func (s *Store) Replace(ctx context.Context, repo, original, edited string) error {
	return s.locked(ctx, repo, func(dir string) error {
		path := filepath.Join(dir, AgentsFile)
		cur, err := readFile(path)
		if err != nil {
			return err
		}
		known := map[string]bool{}
		for _, l := range strings.Split(original+"\n"+edited, "\n") {
			known[norm(l)] = true
		}
		out := ensureNewline(edited)
		for _, l := range strings.Split(cur, "\n") {
			if strings.TrimSpace(l) != "" && !known[norm(l)] {
				out += l + "\n"
				known[norm(l)] = true
			}
		}
		if err := atomicfile.Write(path, []byte(out), 0o600); err != nil {
			return fmt.Errorf("write AGENTS.md: %w", err)
		}
		return nil
	})
}
