package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aceworks/ace/internal/pgtest"
	"github.com/aceworks/ace/internal/testkit"
)

// Fresh stores opened at once: rounds fresh roots, each opened by procs processes with openers goroutines each.
const (
	openRounds  = 40
	openProcs   = 3
	openOpeners = 2
)

// TestFreshStoreOpensConcurrently starts processes that, all at once, open the same series of stores that do
// not exist yet, each from several goroutines, read and close them: every open succeeds. Without the store's
// lock file, 1–2 of 40 pairs of `ace ls` on fresh roots failed with "database is locked (SQLITE_BUSY)".
func TestFreshStoreOpensConcurrently(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var stores []string
	for round := range openRounds {
		stores = append(stores, filepath.Join(dir, strconv.Itoa(round), "ace.db"))
	}
	openAllAtOnce(t, stores)
}

// TestFreshPostgresOpensConcurrently: processes that open the same fresh PostgreSQL databases all at once, each
// from several goroutines with pools of their own, all succeed; the schema is created once, at the latest version.
func TestFreshPostgresOpensConcurrently(t *testing.T) {
	t.Parallel()
	var dbs []string
	for range 6 {
		dbs = append(dbs, pgtest.URL(t))
	}
	openAllAtOnce(t, dbs)
	for _, u := range dbs {
		s := openAt(t, targetOf(u))
		var v, n int
		if err := s.db.QueryRowContext(context.Background(), "SELECT version, (SELECT count(*) FROM ace_schema) FROM ace_schema").Scan(&v, &n); err != nil || v != len(migrations) || n != 1 {
			t.Fatalf("%s: schema version %d in %d rows (%v), want %d in one", u, v, n, err, len(migrations))
		}
	}
}

// openAllAtOnce opens stores (files or URLs) from openProcs processes and this one, started together.
func openAllAtOnce(t *testing.T, stores []string) {
	var cmds []*exec.Cmd
	var gates []io.WriteCloser
	outs := make([]*testkit.Buffer, openProcs)
	for i := range openProcs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperOpener$")
		cmd.Env = append(os.Environ(), "ACE_STORE_OPEN="+strings.Join(stores, "\n"))
		outs[i] = &testkit.Buffer{}
		cmd.Stdout, cmd.Stderr = outs[i], outs[i]
		gate, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, gates = append(cmds, cmd), append(gates, gate)
	}
	// The helpers wait on stdin: closing it starts them together, with this process as one more.
	for _, g := range gates {
		g.Close()
	}
	if err := openSeries(stores); err != nil {
		t.Errorf("test process: %v", err)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("helper %d (pid %d): %v\n%s", i, cmd.Process.Pid, err, outs[i])
		}
	}
}

// openSeries opens the stores one after another, each from openOpeners goroutines at once, reads from each and
// closes it: a process starting and ending, again and again.
func openSeries(stores []string) error {
	var errs []error
	for round, where := range stores {
		var wg sync.WaitGroup
		var mu sync.Mutex
		for range openOpeners {
			wg.Go(func() {
				err := openReadClose(targetOf(where))
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, fmt.Errorf("round %d: %w", round, err))
				}
			})
		}
		wg.Wait()
	}
	return errors.Join(errs...)
}

func openReadClose(g target) error {
	s, err := OpenConfigured(context.Background(), g.url, g.path)
	if err != nil {
		return err
	}
	_, err = s.ListRuns(context.Background(), Filter{})
	return errors.Join(err, s.Close())
}

func TestHelperOpener(t *testing.T) {
	stores := os.Getenv("ACE_STORE_OPEN")
	if stores == "" {
		t.Skip("helper process only")
	}
	io.Copy(io.Discard, os.Stdin) // the gate
	if err := openSeries(strings.Split(stores, "\n")); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
}
