package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/aceworks/ace/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// target is where a test's store lives: a PostgreSQL URL, or else a SQLite file.
type target struct{ url, path string }

func (g target) String() string {
	if g.url != "" {
		return g.url
	}
	return g.path
}

func targetOf(s string) target {
	if filepath.IsAbs(s) {
		return target{path: s}
	}
	return target{url: s}
}

// backend is a database the store's tests run against; fresh gives an empty store's target.
type backend struct {
	name  string
	fresh func(t *testing.T) target
}

// backends are the databases every store test runs against: SQLite, and a PostgreSQL database of the test's own
// (the subtest is skipped where PostgreSQL is not installed, and fails then under CI=true).
func backends() []backend {
	return []backend{
		{"sqlite", func(t *testing.T) target { return target{path: filepath.Join(t.TempDir(), "ace.db")} }},
		{"postgres", func(t *testing.T) target { return target{url: pgtest.URL(t)} }},
	}
}

// forEachBackend runs test on each backend, in parallel.
func forEachBackend(t *testing.T, test func(t *testing.T, fresh func(t *testing.T) target)) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			test(t, b.fresh)
		})
	}
}

func openAt(t *testing.T, g target, opts ...Option) *Store {
	t.Helper()
	s, err := OpenConfigured(context.Background(), g.url, g.path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
