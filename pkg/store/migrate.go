package store

import (
	"context"
	"database/sql"
	"fmt"
)

// A migration brings the schema one version up, inside the transaction of migrate.
type migration func(ctx context.Context, tx *sql.Tx) error

// migrations are applied in order, each once; their index+1 is the schema version (PRAGMA user_version).
// A released migration never changes: stores out there are at its version.
var migrations = []migration{
	execSQL(schemaV1),
	typedStateAndNanoTimes,
	execSQL(`DROP TABLE claims`), // runs are River jobs, unique per issue: no hand-made claims
}

func execSQL(q string) migration {
	return func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, q)
		return err
	}
}

// migrate brings the schema up to date in one transaction. Foreign keys are off meanwhile, as SQLite's way of
// rebuilding a table asks (dropping the old runs table would otherwise delete every event through ON DELETE
// CASCADE); that pragma only takes outside a transaction, hence a connection of its own, and a foreign key check
// before the commit.
func (s *Store) migrate(ctx context.Context) (err error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "PRAGMA foreign_keys=OFF"); err != nil {
		return fmt.Errorf("migration: foreign keys off: %w", err)
	}
	defer func() {
		// The connection goes back to the pool: it must enforce foreign keys again, or be dropped.
		if _, ferr := conn.ExecContext(context.WithoutCancel(ctx), "PRAGMA foreign_keys=ON"); ferr != nil && err == nil {
			err = fmt.Errorf("migration: foreign keys on: %w", ferr)
		}
	}()
	tx, err := conn.BeginTx(ctx, nil)
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
	if v == len(migrations) {
		return nil
	}
	for i := v; i < len(migrations); i++ {
		if err := migrations[i](ctx, tx); err != nil {
			return fmt.Errorf("migration %d: %w", i+1, err)
		}
	}
	rows, err := tx.QueryContext(ctx, "PRAGMA foreign_key_check")
	if err != nil {
		return fmt.Errorf("foreign key check: %w", err)
	}
	bad := rows.Next()
	rows.Close()
	if bad {
		return fmt.Errorf("foreign key check: the migrated store has dangling references")
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", len(migrations))); err != nil {
		return fmt.Errorf("write schema version: %w", err)
	}
	return tx.Commit()
}

// schemaV1 is the first schema: times as RFC 3339 text, the engine's bookkeeping as a JSON map of strings (vars).
const schemaV1 = `CREATE TABLE runs (
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
	);`
