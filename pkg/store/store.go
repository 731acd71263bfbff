// Package store keeps ace's state in SQLite (pure Go driver, no cgo): runs, an append-only event log per run,
// and issue claims. WAL mode and a busy timeout let `ace poll` from cron, `ace run` and `ace ls` work at once;
// every write is one transaction, so a crash never leaves a run half-written.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// ErrNotFound is returned when a run does not exist.
var ErrNotFound = errors.New("not found")

// ErrConflict is returned by UpdateRun when another process changed the run since it was read.
var ErrConflict = errors.New("run changed by another process")

// Store is the state store. It is safe for concurrent use and across processes.
type Store struct {
	db   *sql.DB
	now  func() time.Time
	lock string // the lock file that orders opening and closing across processes (see setUp)
}

// Option configures Open.
type Option func(*Store)

// WithClock makes now the store's clock: the times it stamps on runs, events and claims. The default is
// time.Now; the engine passes its own clock so that there is one.
func WithClock(now func() time.Time) Option {
	return func(s *Store) {
		if now != nil {
			s.now = now
		}
	}
}

// Open opens (creating when missing) the store at path and brings its schema up to date.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create store directory: %w", err)
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(ON)")
	q.Add("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	s := &Store{db: db, now: time.Now, lock: path + ".lock"}
	for _, o := range opts {
		o(s)
	}
	if err := s.setUp(ctx, path); err != nil {
		db.Close()
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	return s, nil
}

// setUp switches a new database to WAL and migrates its schema under a file lock next to it. Without the lock
// two processes starting on a fresh root raced: switching to WAL, and the WAL clean-up of the last connection
// to close, take locks that SQLite's busy handler does not wait for, so one of them failed with SQLITE_BUSY.
// With it, the second finds the work done. Close takes the same lock.
func (s *Store) setUp(ctx context.Context, path string) error {
	lock := flock.New(s.lock)
	if ok, err := lock.TryLockContext(ctx, 10*time.Millisecond); err != nil || !ok {
		return fmt.Errorf("lock %s for migration: %w", s.lock, errors.Join(err, ctx.Err()))
	}
	defer lock.Unlock()
	// The first connection applies the DSN's pragmas (WAL among them) here, under the lock.
	if err := s.migrate(ctx); err != nil {
		return err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return fmt.Errorf("restrict store permissions: %w", err)
	}
	return nil
}

// DB is the database handle, for the job queue that lives in the same database (River's tables beside ace's).
func (s *Store) DB() *sql.DB { return s.db }

// Close closes the database. The last connection to close cleans up the WAL under an exclusive lock that
// another process opening the store would fail on rather than wait for: closing takes the open lock too. When
// the lock cannot be had the store closes anyway; the lock only narrows a race.
func (s *Store) Close() error {
	lock := flock.New(s.lock)
	if err := lock.Lock(); err == nil {
		defer lock.Unlock()
	}
	return s.db.Close()
}

// nanos is how the store keeps a time: integer Unix nanoseconds, which order exactly (RFC 3339 text with its
// trailing zeros trimmed did not, within a second). The zero time is 0.
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}
