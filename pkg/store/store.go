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

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// ErrNotFound is returned when a run does not exist.
var ErrNotFound = errors.New("not found")

// ErrConflict is returned by UpdateRun when another process changed the run since it was read.
var ErrConflict = errors.New("run changed by another process")

// Store is the state store. It is safe for concurrent use and across processes.
type Store struct {
	db *sql.DB
}

// Open opens (creating when missing) the store at path and brings its schema up to date.
func Open(ctx context.Context, path string) (*Store, error) {
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
	s := &Store{db: db}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		db.Close()
		return nil, fmt.Errorf("restrict store permissions: %w", err)
	}
	return s, nil
}

// DB is the database handle, for the job queue that lives in the same database (River's tables beside ace's).
func (s *Store) DB() *sql.DB { return s.db }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// migrations are applied in order, each once; their index+1 is the schema version (PRAGMA user_version).
var migrations = []string{
	`CREATE TABLE runs (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		repo TEXT NOT NULL,
		issue INTEGER NOT NULL,
		attempt INTEGER NOT NULL,
		agent TEXT NOT NULL,
		runner TEXT NOT NULL DEFAULT 'tmux',
		step TEXT NOT NULL,
		status TEXT NOT NULL,
		session TEXT NOT NULL DEFAULT '',
		agent_session_id TEXT NOT NULL DEFAULT '',
		workdir TEXT NOT NULL DEFAULT '',
		branch TEXT NOT NULL DEFAULT '',
		base_branch TEXT NOT NULL DEFAULT '',
		pr_number INTEGER NOT NULL DEFAULT 0,
		pr_url TEXT NOT NULL DEFAULT '',
		status_comment_id INTEGER NOT NULL DEFAULT 0,
		nudges INTEGER NOT NULL DEFAULT 0,
		restarts INTEGER NOT NULL DEFAULT 0,
		error TEXT NOT NULL DEFAULT '',
		vars TEXT NOT NULL DEFAULT '{}',
		version INTEGER NOT NULL DEFAULT 1,
		triggered_at TEXT NOT NULL,
		created_at TEXT NOT NULL,
		updated_at TEXT NOT NULL,
		finished_at TEXT,
		UNIQUE (repo, issue, attempt)
	);
	CREATE INDEX runs_status ON runs (status);
	CREATE TABLE events (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
		time TEXT NOT NULL,
		kind TEXT NOT NULL,
		step TEXT NOT NULL DEFAULT '',
		message TEXT NOT NULL DEFAULT '',
		data TEXT NOT NULL DEFAULT ''
	);
	CREATE INDEX events_run ON events (run_id, id);
	CREATE TABLE claims (
		repo TEXT NOT NULL,
		issue INTEGER NOT NULL,
		owner TEXT NOT NULL,
		expires_at TEXT NOT NULL,
		PRIMARY KEY (repo, issue)
	);`,
}

func (s *Store) migrate(ctx context.Context) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin migration: %w", err)
	}
	defer tx.Rollback()
	var v int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if v > len(migrations) {
		return fmt.Errorf("schema version %d is newer than this ace knows (%d): upgrade ace", v, len(migrations))
	}
	for i := v; i < len(migrations); i++ {
		if _, err := tx.ExecContext(ctx, migrations[i]); err != nil {
			return fmt.Errorf("migration %d: %w", i+1, err)
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", len(migrations))); err != nil {
		return fmt.Errorf("write schema version: %w", err)
	}
	return tx.Commit()
}
