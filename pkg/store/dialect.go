package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Kind names the database a store lives in.
type Kind string

// The databases a store can live in.
const (
	// SQLite is one file under the workspace root: the default, for one machine.
	SQLite Kind = "sqlite"
	// PostgreSQL is a server that several ace hosts share (a fleet).
	PostgreSQL Kind = "postgres"
)

// The store's SQL is written once, with ? placeholders, in the subset both databases speak (ids come back through
// RETURNING, which SQLite has too). What still differs is here and in migrate.go (schema version, open lock,
// the PostgreSQL baseline schema): rebind, and how each reports a unique violation.

// rebind rewrites the ? placeholders of query for the database: PostgreSQL numbers them ($1, $2 …). A ? inside a
// quoted string or identifier is left alone.
func rebind(k Kind, query string) string {
	if k != PostgreSQL || !strings.Contains(query, "?") {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 16)
	n := 0
	var quote byte
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// isUniqueViolation reports a UNIQUE constraint that refused an insert, in either database.
func isUniqueViolation(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE
	}
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505" // unique_violation
}

// querier is what handle runs queries on: a *sql.DB, a *sql.Conn or a *sql.Tx.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// handle runs the store's queries, rebound for its database. Every query of the store goes through one.
type handle struct {
	q    querier
	kind Kind
}

func (h handle) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return h.q.ExecContext(ctx, rebind(h.kind, query), args...)
}

func (h handle) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return h.q.QueryContext(ctx, rebind(h.kind, query), args...)
}

func (h handle) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return h.q.QueryRowContext(ctx, rebind(h.kind, query), args...)
}

// txn is a transaction of the store.
type txn struct {
	handle
	tx *sql.Tx
}

func (t *txn) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	return t.tx.PrepareContext(ctx, rebind(t.kind, query))
}

func (t *txn) Commit() error   { return t.tx.Commit() }
func (t *txn) Rollback() error { return t.tx.Rollback() }

// begin starts a transaction on the store's database.
func (s *Store) begin(ctx context.Context) (*txn, error) {
	tx, err := s.raw.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	return &txn{handle: handle{q: tx, kind: s.kind}, tx: tx}, nil
}

// Unavailable reports whether err says the database could not be reached or went away under a query: PostgreSQL
// restarting, failing over or shutting down, the network cut, a connection it closed. The same call may succeed
// once the database is back, so a caller waits and tries again rather than counting it a failure of what it was
// doing. SQLite, a file, is never unavailable in this sense.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// Class 08 is a connection exception; 57P01–57P05 are admin_shutdown, crash_shutdown, cannot_connect_now,
		// database_dropped and idle_session_timeout (57014, a cancelled query, is not the database going away).
		return strings.HasPrefix(pe.Code, "08") || strings.HasPrefix(pe.Code, "57P")
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	switch {
	case errors.As(err, &ce), errors.As(err, &ne), errors.Is(err, pgconn.ErrConnClosed),
		errors.Is(err, driver.ErrBadConn), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	}
	// pgx marks the errors of a query that never reached the server (a connection already broken) as safe to retry.
	return pgconn.SafeToRetry(err)
}
