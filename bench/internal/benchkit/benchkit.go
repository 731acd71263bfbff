// Package benchkit holds what the benchmarks share: a seeded bare remote, git, quoting for agent command
// templates, and a log handler that counts the warnings and errors of the engine under measure.
package benchkit

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// SeedRemote makes remote a bare repository with one commit on main, a README.md saying readme, made in seed.
func SeedRemote(ctx context.Context, seed, remote, readme string) error {
	if err := os.MkdirAll(seed, 0o755); err != nil {
		return err
	}
	if err := Git(ctx, "", "init", "-q", "--bare", "-b", "main", remote); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(seed, "README.md"), []byte(readme), 0o644); err != nil {
		return err
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "-A"},
		{"-c", "user.name=bench", "-c", "user.email=bench@ace.invalid", "commit", "-q", "-m", "Initial commit"},
		{"push", "-q", remote, "main"},
	} {
		if err := Git(ctx, seed, args...); err != nil {
			return err
		}
	}
	return nil
}

// Git runs git with args (in dir unless ""), its output in the error.
func Git(ctx context.Context, dir string, args ...string) error {
	if dir != "" {
		args = append([]string{"-C", dir}, args...)
	}
	out, err := exec.CommandContext(ctx, "git", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// Quote quotes s for an agent command template (split like a shell would, never run by one).
func Quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// WarnCounter counts the warnings and errors logged, keeping the first few.
type WarnCounter struct {
	mu    sync.Mutex
	n     int
	first []string
}

func (c *WarnCounter) add(rec slog.Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	if len(c.first) < 5 {
		var b strings.Builder
		b.WriteString(rec.Level.String() + " " + rec.Message)
		rec.Attrs(func(a slog.Attr) bool {
			b.WriteString(" " + a.String())
			return true
		})
		c.first = append(c.first, b.String())
	}
}

// Snapshot returns how many were logged and the first few.
func (c *WarnCounter) Snapshot() (int, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n, append([]string(nil), c.first...)
}

// Handler logs to inner and counts in c what is logged at warning level or above (with the attributes the
// logger was given).
func (c *WarnCounter) Handler(inner slog.Handler) slog.Handler {
	return &countingHandler{inner: inner, c: c}
}

type countingHandler struct {
	inner slog.Handler
	c     *WarnCounter
	attrs []slog.Attr
}

func (h *countingHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn || h.inner.Enabled(ctx, l)
}

func (h *countingHandler) Handle(ctx context.Context, rec slog.Record) error {
	if rec.Level >= slog.LevelWarn {
		r := rec.Clone()
		r.AddAttrs(h.attrs...)
		h.c.add(r)
	}
	if !h.inner.Enabled(ctx, rec.Level) {
		return nil
	}
	return h.inner.Handle(ctx, rec)
}

func (h *countingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &countingHandler{inner: h.inner.WithAttrs(as), c: h.c, attrs: append(append([]slog.Attr(nil), h.attrs...), as...)}
}

func (h *countingHandler) WithGroup(name string) slog.Handler {
	return &countingHandler{inner: h.inner.WithGroup(name), c: h.c, attrs: h.attrs}
}
