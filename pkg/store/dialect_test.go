package store

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aceworks/ace/internal/pgtest"
)

func TestRebind(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"SELECT 1", "SELECT 1"},
		{"UPDATE runs SET a=?, b=? WHERE id=?", "UPDATE runs SET a=$1, b=$2 WHERE id=$3"},
		{"SELECT '?' || x FROM t WHERE y=? AND z='it''s ?' AND \"odd?\"=?", "SELECT '?' || x FROM t WHERE y=$1 AND z='it''s ?' AND \"odd?\"=$2"},
	} {
		if got := rebind(PostgreSQL, c.in); got != c.want {
			t.Errorf("rebind(%q) = %q, want %q", c.in, got, c.want)
		}
		if got := rebind(SQLite, c.in); got != c.in {
			t.Errorf("SQLite rebound %q to %q", c.in, got)
		}
	}
}

// columns lists a table's columns in order, with the affinity they store integers and text with.
func columns(t *testing.T, s *Store, table string) []string {
	t.Helper()
	q := "SELECT name, type FROM pragma_table_info(?) ORDER BY cid"
	if s.Kind() == PostgreSQL {
		q = "SELECT column_name, data_type FROM information_schema.columns WHERE table_name=? ORDER BY ordinal_position"
	}
	rows, err := s.db.QueryContext(context.Background(), q, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			t.Fatal(err)
		}
		switch typ = strings.ToUpper(typ); typ {
		case "BIGINT":
			typ = "INTEGER" // SQLite's INTEGER is 64-bit, as BIGINT is
		}
		out = append(out, name+" "+typ)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSchemasMatch: PostgreSQL's baseline schema has the tables and columns, in order and of the same kinds,
// that SQLite's migrations arrive at.
func TestSchemasMatch(t *testing.T) {
	t.Parallel()
	lite := openAt(t, target{path: filepath.Join(t.TempDir(), "ace.db")})
	pg := openAt(t, target{url: pgtest.URL(t)})
	if len(migrations) < postgresBaseline {
		t.Fatalf("%d migrations, below PostgreSQL's baseline %d", len(migrations), postgresBaseline)
	}
	for _, table := range []string{"runs", "events"} {
		l, p := columns(t, lite, table), columns(t, pg, table)
		if len(l) == 0 || !slices.Equal(l, p) {
			t.Errorf("table %s\nSQLite     %v\nPostgreSQL %v", table, l, p)
		}
	}
}

// TestPostgresSchemaVersion: a fresh database gets the latest version, reopening changes nothing, and a database
// from a newer ace is refused.
func TestPostgresSchemaVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.URL(t)
	s := openAt(t, target{url: url})
	r := &Run{Repo: "o/r", Issue: 1, Attempt: 1, Agent: "x", Step: "claim", Status: StatusActive}
	if err := s.CreateRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openAt(t, target{url: url})
	if got, err := s.GetRun(ctx, r.ID); err != nil || got.Repo != "o/r" {
		t.Fatalf("run after reopening: %+v, %v", got, err)
	}
	if _, err := s.db.ExecContext(ctx, "UPDATE ace_schema SET version = 99"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := OpenPostgres(ctx, url); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("a database of schema version 99 opened (%v)", err)
	}
}

// TestPostgresErrorsHideThePassword: a URL that does not connect, or does not parse, is reported without its
// password.
func TestPostgresErrorsHideThePassword(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10_000_000_000)
	defer cancel()
	for _, url := range []string{
		"postgres://ace:s3cretpw@127.0.0.1:1/ace?connect_timeout=5",
		"postgres://ace:s3cretpw@127.0.0.1:notaport/ace",
	} {
		_, err := OpenPostgres(ctx, url)
		if err == nil {
			t.Fatalf("%s opened", url)
		}
		if strings.Contains(err.Error(), "s3cretpw") {
			t.Fatalf("the error shows the password: %v", err)
		}
	}
}

// TestUniqueViolationOfBothDrivers: a duplicate attempt is ErrConflict on either database.
func TestUniqueViolationOfBothDrivers(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, fresh func(*testing.T) target) {
		s := openAt(t, fresh(t))
		for i := range 2 {
			err := s.CreateRun(context.Background(), &Run{Repo: "o/r", Issue: 5, Attempt: 1, Agent: "x", Step: "claim", Status: StatusActive})
			if i == 1 && !errors.Is(err, ErrConflict) || i == 0 && err != nil {
				t.Fatalf("create %d: %v", i+1, err)
			}
		}
	})
}
