// Package store keeps ace's state: runs and an append-only event log per run. It lives in SQLite (pure Go
// driver, no cgo) by default, where WAL mode and a busy timeout let `ace poll` from cron, `ace run` and `ace ls`
// work at once, or in PostgreSQL, which a fleet of ace hosts shares. Both run one schema and one set of queries
// (dialect.go holds what differs); every write is one transaction, so a crash never leaves a run half-written.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/gofrs/flock"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"modernc.org/sqlite"
)

// ErrNotFound is returned when a run does not exist.
var ErrNotFound = errors.New("not found")

// ErrConflict is returned by UpdateRun when another process changed the run since it was read.
var ErrConflict = errors.New("run changed by another process")

// Store is the state store. It is safe for concurrent use and across processes.
type Store struct {
	kind  Kind
	raw   *sql.DB
	db    handle // raw, with queries rebound for the database
	pool  *pgxpool.Pool
	where string // the file, or the URL without its password
	now   func() time.Time
	lock  string // SQLite: the lock file that orders opening and closing across processes (see setUp)
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

// OpenConfigured opens the store ace is configured with: on PostgreSQL when url is set ([store] url,
// ACE_STORE_URL), else the SQLite file at path.
func OpenConfigured(ctx context.Context, url, path string, opts ...Option) (*Store, error) {
	if url != "" {
		return OpenPostgres(ctx, url, opts...)
	}
	return Open(ctx, path, opts...)
}

// Open opens (creating when missing) the SQLite store at path and brings its schema up to date.
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
	conn, err := sqlite.NewConnector("file:" + path + "?" + q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	db := sql.OpenDB(stmtConnector{conn})
	db.SetMaxIdleConns(sqliteIdleConns)
	s := newStore(SQLite, db, path, opts)
	s.lock = path + ".lock"
	if err := s.setUp(ctx, path); err != nil {
		db.Close()
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	return s, nil
}

// sqliteIdleConns is how many SQLite connections the store keeps open between uses. database/sql keeps 2 by
// default, and an ace process uses more at once (River's producers, completer and heartbeats beside the engine's
// steps): each connection past 2 was closed after its query and a new one opened for the next, which runs the
// DSN's pragmas, reads the whole schema and prepares every statement again (its statement cache goes with it)
// — a tenth of the e2e tests' own CPU. A kept connection costs a file handle and SQLite's page cache.
const sqliteIdleConns = 8

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

// OpenPostgres opens the store in the PostgreSQL database at url (postgres://user@host:port/db?…; libpq's
// PG* environment variables and ~/.pgpass fill in what it leaves out, the password among them; pgx's
// pool_max_conns sizes the pool the store and the job queue share) and brings its schema up to date. The
// database must exist; ace creates its tables in it.
func OpenPostgres(ctx context.Context, url string, opts ...Option) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's message may quote the URL, password and all: say only what is wrong.
		return nil, errors.New("store url: not a PostgreSQL connection URL (postgres://user@host:port/database)")
	}
	where := redact(cfg)
	if cfg.ConnConfig.ConnectTimeout == 0 {
		// A database that does not answer fails the command in seconds, not at the kernel's TCP timeout.
		cfg.ConnConfig.ConnectTimeout = 10 * time.Second
	}
	poolDefaults(cfg, url)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", where, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("store %s: connect: %w", where, err)
	}
	s := newStore(PostgreSQL, stdlib.OpenDBFromPool(pool), where, opts)
	s.pool = pool
	if err := s.migrate(ctx); err != nil {
		s.raw.Close()
		pool.Close()
		return nil, fmt.Errorf("store %s: %w", where, err)
	}
	return s, nil
}

// A fleet of hosts shares PostgreSQL's connections (max_connections, 100 by default): a host holds one by default,
// so that 100 hosts fit. One is enough for what a host asks of the database — River's job fetch (poll-only: no
// LISTEN connection of its own), heartbeats, the steps' reads and writes, each a few statements taking well under
// a millisecond — and nothing in ace or River holds a connection while it waits for another (no query runs
// inside a transaction on another connection). pgx's default would open up to max(4, CPUs) and keep each for 30
// minutes once opened: 2.6 a host while idle, measured (bench/fleet), as the job fetches of two queues and the
// heartbeat come at the same instant. pool_max_conns in the store URL sets more (idle ones close after 5 s);
// pool_max_conn_idle_time and pool_health_check_period, given, stay as given.
const (
	poolMaxConns     = 1
	poolIdleTime     = 5 * time.Second
	poolHealthPeriod = time.Second
)

func poolDefaults(cfg *pgxpool.Config, raw string) {
	q := url.Values{}
	if u, err := url.Parse(raw); err == nil {
		q = u.Query()
	}
	if !q.Has("pool_max_conns") {
		cfg.MaxConns = poolMaxConns
	}
	if !q.Has("pool_max_conn_idle_time") {
		cfg.MaxConnIdleTime = poolIdleTime
	}
	if !q.Has("pool_health_check_period") {
		cfg.HealthCheckPeriod = poolHealthPeriod
	}
}

// redact names a PostgreSQL store in messages: user, host, port and database, never the password.
func redact(cfg *pgxpool.Config) string {
	c := cfg.ConnConfig
	return fmt.Sprintf("postgres://%s@%s/%s", c.User, net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port))), c.Database)
}

func newStore(k Kind, db *sql.DB, where string, opts []Option) *Store {
	s := &Store{kind: k, raw: db, db: handle{q: db, kind: k}, where: where, now: time.Now}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Kind says which database the store lives in: the job queue sharing it picks its driver by it.
func (s *Store) Kind() Kind { return s.kind }

// Where names the store for people: its file, or its PostgreSQL URL without the password.
func (s *Store) Where() string { return s.where }

// DB is the database handle, for the job queue that lives in the same SQLite database (River's tables beside
// ace's). Its queries take the database's own placeholders.
func (s *Store) DB() *sql.DB { return s.raw }

// Pool is the PostgreSQL connection pool (nil for SQLite), for the job queue's pgx driver.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close closes the database. On SQLite the last connection to close cleans up the WAL under an exclusive lock
// that another process opening the store would fail on rather than wait for: closing takes the open lock too.
// When the lock cannot be had the store closes anyway; the lock only narrows a race.
func (s *Store) Close() error {
	if s.kind == PostgreSQL {
		err := s.raw.Close()
		s.pool.Close()
		return err
	}
	lock := flock.New(s.lock)
	if err := lock.Lock(); err == nil {
		defer lock.Unlock()
	}
	return s.raw.Close()
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
