package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"modernc.org/sqlite"
)

// openCached opens a database at a new path through the statement cache, with one connection, so that every
// call below meets the same connection's cache.
func openCached(t testing.TB, cached bool) *sql.DB {
	t.Helper()
	dsn := "file:" + filepath.Join(t.TempDir(), "c.db") + "?_pragma=journal_mode(WAL)"
	var db *sql.DB
	if cached {
		conn, err := sqlite.NewConnector(dsn)
		if err != nil {
			t.Fatal(err)
		}
		db = sql.OpenDB(stmtConnector{conn})
	} else {
		var err error
		if db, err = sql.Open("sqlite", dsn); err != nil {
			t.Fatal(err)
		}
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t (v) VALUES ('a'), ('b'), ('c')`); err != nil {
		t.Fatal(err)
	}
	return db
}

// cachedOf is the connection's cache, through the one connection db holds.
func cachedOf(t *testing.T, db *sql.DB) (n int) {
	t.Helper()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.Raw(func(c any) error { n = c.(*cachedConn).lru.Len(); return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestStatementsAreKeptPerConnection: a query run again is the kept statement (one entry, whatever the calls),
// a query whose rows are still open when it runs again in the same transaction gets a statement of its own and
// both read every row, and a connection keeps at most stmtCacheSize statements.
func TestStatementsAreKeptPerConnection(t *testing.T) {
	db := openCached(t, true)
	base := cachedOf(t, db)
	for range 50 {
		var v string
		if err := db.QueryRow(`SELECT v FROM t WHERE id = ?`, 2).Scan(&v); err != nil || v != "b" {
			t.Fatalf("row 2: %q, %v", v, err)
		}
	}
	if n := cachedOf(t, db); n != base+1 {
		t.Fatalf("%d statements kept after one query run 50 times, want %d", n, base+1)
	}

	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	const all = `SELECT id, v FROM t ORDER BY id`
	outer, err := tx.Query(all)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for outer.Next() {
		var id int
		var v string
		if err := outer.Scan(&id, &v); err != nil {
			t.Fatal(err)
		}
		inner, err := tx.Query(all) // the same statement while the outer rows are open
		if err != nil {
			t.Fatal(err)
		}
		rows := 0
		for inner.Next() {
			rows++
		}
		if err := inner.Close(); err != nil || rows != 3 {
			t.Fatalf("inner query read %d rows (%v), want 3", rows, err)
		}
		seen = append(seen, v)
	}
	if err := outer.Close(); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(seen) != "[a b c]" {
		t.Fatalf("outer rows %v, want [a b c]", seen)
	}
	if _, err := tx.Exec(`UPDATE t SET v = ? WHERE id = ?`, "B", 2); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	var v string
	if err := db.QueryRow(`SELECT v FROM t WHERE id = ?`, 2).Scan(&v); err != nil || v != "B" {
		t.Fatalf("row 2 after the update: %q, %v", v, err)
	}

	for i := range stmtCacheSize + 20 {
		var n int
		if err := db.QueryRow(fmt.Sprintf(`SELECT %d FROM t LIMIT 1`, i)).Scan(&n); err != nil || n != i {
			t.Fatalf("query %d: %d, %v", i, n, err)
		}
	}
	if n := cachedOf(t, db); n != stmtCacheSize {
		t.Fatalf("%d statements kept, want at most %d", n, stmtCacheSize)
	}
	// A schema change under a kept statement: SQLite compiles it again.
	if _, err := db.Exec(`ALTER TABLE t ADD COLUMN w TEXT DEFAULT 'x'`); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT v FROM t WHERE id = ?`, 3).Scan(&v); err != nil || v != "c" {
		t.Fatalf("row 3 after the schema changed: %q, %v", v, err)
	}
}

// BenchmarkQuery is one small query by primary key, with and without the statement cache:
// go test ./pkg/store -run '^$' -bench Query
func BenchmarkQuery(b *testing.B) {
	for _, cached := range []bool{false, true} {
		b.Run(map[bool]string{false: "parsed-each-time", true: "kept"}[cached], func(b *testing.B) {
			db := openCached(b, cached)
			q := `SELECT v FROM t WHERE id = ? AND v IS NOT NULL AND id IN (SELECT id FROM t WHERE v <> 'zzz') ORDER BY id LIMIT 1`
			for b.Loop() {
				var v string
				if err := db.QueryRow(q, 2).Scan(&v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestConnectionsAreKeptBetweenUses: the connections several callers use at once stay open for the next ones (a
// new connection reads the schema and prepares its statements anew), up to sqliteIdleConns.
func TestConnectionsAreKeptBetweenUses(t *testing.T) {
	t.Parallel()
	st, err := Open(context.Background(), filepath.Join(t.TempDir(), "ace.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	db := st.DB()
	for range 3 {
		var conns []*sql.Conn
		for range sqliteIdleConns {
			c, err := db.Conn(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
		}
		for _, c := range conns {
			c.Close()
		}
	}
	if s := db.Stats(); s.MaxIdleClosed != 0 || s.OpenConnections != sqliteIdleConns {
		t.Errorf("%d connections open, %d closed for want of an idle place: want the %d in use kept", s.OpenConnections, s.MaxIdleClosed, sqliteIdleConns)
	}
}
