package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// A migration brings the schema one version up, inside the transaction of migrate.
type migration func(ctx context.Context, tx *txn) error

// migrations are applied in order, each once; their index+1 is the schema version (SQLite: PRAGMA user_version;
// PostgreSQL: the table ace_schema). A released migration never changes: stores out there are at its version.
// Those from postgresBaseline on run on both databases, through the same rebinding handle as every query.
var migrations = []migration{
	execSQL(schemaV1),
	typedStateAndNanoTimes,
	execSQL(`DROP TABLE claims`), // runs are River jobs, unique per issue: no hand-made claims
	// A fleet: each run belongs to the host that holds its session and working copy; hosts heartbeat.
	execSQL(`ALTER TABLE runs ADD COLUMN host TEXT NOT NULL DEFAULT '';
	CREATE TABLE hosts (
		name TEXT PRIMARY KEY,
		started_at BIGINT NOT NULL,
		heartbeat_at BIGINT NOT NULL,
		max_concurrent INTEGER NOT NULL,
		running INTEGER NOT NULL
	)`),
	// Slots: what each run holds of its host's slots, apart from its versioned row (slots.go); the labelled
	// issues no host had a slot for (queue.go).
	slotColumns,
	// An eval's items shared by a fleet's hosts: numbered once, held under a lease, scored once (eval.go).
	execSQL(`CREATE TABLE eval_items (
		eval_name TEXT NOT NULL,
		n BIGINT NOT NULL,
		item_key TEXT NOT NULL,
		host TEXT NOT NULL DEFAULT '',
		lease_until BIGINT NOT NULL DEFAULT 0,
		result TEXT NOT NULL DEFAULT '',
		PRIMARY KEY (eval_name, n),
		UNIQUE (eval_name, item_key)
	)`),
}

// postgresBaseline is the schema version a PostgreSQL store starts at: PostgreSQL came with it, so it has no
// older history to migrate. schemaPostgres creates that version's tables as the SQLite migrations left them
// (TestSchemasMatch holds them together); every later migration runs on both databases.
const postgresBaseline = 3

func execSQL(q string) migration {
	return func(ctx context.Context, tx *txn) error {
		_, err := tx.ExecContext(ctx, q)
		return err
	}
}

func (s *Store) migrate(ctx context.Context) error {
	if s.kind == PostgreSQL {
		return s.migratePostgres(ctx)
	}
	return s.migrateSQLite(ctx)
}

// migrateSQLite brings the schema up to date in one transaction. Foreign keys are off meanwhile, as SQLite's way
// of rebuilding a table asks (dropping the old runs table would otherwise delete every event through ON DELETE
// CASCADE); that pragma only takes outside a transaction, hence a connection of its own, and a foreign key check
// before the commit. The caller holds the open lock (setUp).
func (s *Store) migrateSQLite(ctx context.Context) (err error) {
	conn, err := s.raw.Conn(ctx)
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
	sqlTx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin migration: %w", err)
	}
	tx := &txn{handle: handle{q: sqlTx, kind: SQLite}, tx: sqlTx}
	defer tx.Rollback()
	var v int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if v == len(migrations) {
		return nil
	}
	if err := applyMigrations(ctx, tx, v); err != nil {
		return err
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

// postgresLockKey is the advisory lock that orders the migrations of ace processes starting at once on one
// PostgreSQL database (any 64-bit number no other application on the database uses: "ace" and a version).
const postgresLockKey = 0x616365_0001

// migratePostgres brings the schema up to date in one transaction, under a transaction-scoped advisory lock
// (pg_advisory_xact_lock): a second ace starting meanwhile waits for it and then finds the work done; the lock
// goes with the transaction, whatever becomes of the connection.
func (s *Store) migratePostgres(ctx context.Context) error {
	tx, err := s.begin(ctx)
	if err != nil {
		return fmt.Errorf("begin migration: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(?)", int64(postgresLockKey)); err != nil {
		return fmt.Errorf("lock for migration: %w", err)
	}
	if _, err := tx.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS ace_schema (version INTEGER NOT NULL)"); err != nil {
		return fmt.Errorf("schema version table: %w", err)
	}
	var v int
	err = tx.QueryRowContext(ctx, "SELECT version FROM ace_schema").Scan(&v)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if _, err := tx.ExecContext(ctx, "INSERT INTO ace_schema (version) VALUES (0)"); err != nil {
			return fmt.Errorf("write schema version: %w", err)
		}
	case err != nil:
		return fmt.Errorf("read schema version: %w", err)
	}
	from := v
	if v == 0 {
		for _, q := range schemaPostgres {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("create the schema (version %d): %w", postgresBaseline, err)
			}
		}
		v = postgresBaseline
	}
	if v < postgresBaseline {
		return fmt.Errorf("schema version %d is below PostgreSQL's first (%d): the ace_schema table was changed by hand", v, postgresBaseline)
	}
	if err := applyMigrations(ctx, tx, v); err != nil {
		return err
	}
	if from == len(migrations) {
		return nil
	}
	if _, err := tx.ExecContext(ctx, "UPDATE ace_schema SET version = ?", len(migrations)); err != nil {
		return fmt.Errorf("write schema version: %w", err)
	}
	return tx.Commit()
}

// applyMigrations applies the migrations after version v.
func applyMigrations(ctx context.Context, tx *txn, v int) error {
	if v > len(migrations) {
		return fmt.Errorf("schema version %d is newer than this ace knows (%d): upgrade ace", v, len(migrations))
	}
	for i := v; i < len(migrations); i++ {
		if err := migrations[i](ctx, tx); err != nil {
			return fmt.Errorf("migration %d: %w", i+1, err)
		}
	}
	return nil
}

// schemaPostgres is the schema at postgresBaseline, in PostgreSQL's words: identity ids, and BIGINT for every
// integer (SQLite's INTEGER is 64-bit; PostgreSQL's is not).
var schemaPostgres = []string{
	`CREATE TABLE runs (
		id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
		repo TEXT NOT NULL,
		issue BIGINT NOT NULL,
		attempt BIGINT NOT NULL,
		agent TEXT NOT NULL,
		runner TEXT NOT NULL DEFAULT 'tmux',
		step TEXT NOT NULL,
		status TEXT NOT NULL,
		session TEXT NOT NULL DEFAULT '',
		agent_session_id TEXT NOT NULL DEFAULT '',
		workdir TEXT NOT NULL DEFAULT '',
		branch TEXT NOT NULL DEFAULT '',
		base_branch TEXT NOT NULL DEFAULT '',
		pr_number BIGINT NOT NULL DEFAULT 0,
		pr_url TEXT NOT NULL DEFAULT '',
		status_comment_id BIGINT NOT NULL DEFAULT 0,
		nudges BIGINT NOT NULL DEFAULT 0,
		restarts BIGINT NOT NULL DEFAULT 0,
		error TEXT NOT NULL DEFAULT '',
		state TEXT NOT NULL DEFAULT '{}',
		version BIGINT NOT NULL DEFAULT 1,
		triggered_at BIGINT NOT NULL,
		created_at BIGINT NOT NULL,
		updated_at BIGINT NOT NULL,
		finished_at BIGINT,
		UNIQUE (repo, issue, attempt)
	)`,
	`CREATE INDEX runs_status ON runs (status)`,
	`CREATE TABLE events (
		id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
		run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
		time BIGINT NOT NULL,
		kind TEXT NOT NULL,
		step TEXT NOT NULL DEFAULT '',
		message TEXT NOT NULL DEFAULT '',
		data TEXT NOT NULL DEFAULT ''
	)`,
	`CREATE INDEX events_run ON events (run_id, id)`,
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
