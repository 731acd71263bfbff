package pgtest

import (
	"context"
	"os"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// TestDatabasesAreSeparate: each test's database is its own, on a cluster that listens on 127.0.0.1, and many are
// created at once without error.
func TestDatabasesAreSeparate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	urls := make([]string, 8)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range urls {
		wg.Go(func() { urls[i] = URL(t) })
	}
	wg.Wait()
	t.Logf("cluster started in %s; 8 databases created in %s (together)", StartTime(), time.Since(start)-StartTime())
	seen := map[string]bool{}
	for i, u := range urls {
		if seen[u] {
			t.Fatalf("database %s handed out twice", u)
		}
		seen[u] = true
		conn, err := pgx.Connect(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "CREATE TABLE t (n INTEGER)"); err != nil {
			t.Fatalf("database %d: %v", i, err)
		}
		var addr string
		if err := conn.QueryRow(ctx, "SELECT host(inet_server_addr())").Scan(&addr); err != nil || addr != "127.0.0.1" {
			t.Fatalf("server address %q (%v), want 127.0.0.1", addr, err)
		}
	}
}

// TestStopEndsThePostmaster: a cluster of its own starts and stops by PID, leaving no process or files behind.
func TestStopEndsThePostmaster(t *testing.T) {
	t.Parallel()
	SharedCluster(t) // skips where PostgreSQL is missing
	c, err := Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	pid := c.PID()
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Fatalf("postgres (pid %d) still runs after Stop", pid)
	}
	if _, err := os.Stat(c.dir); !os.IsNotExist(err) {
		t.Fatalf("cluster dir left behind: %v", err)
	}
}

// TestRestartKeepsPortAndData: a cluster of its own shut down by its PID refuses connections; started again it
// answers on the same URL with its data, after a fast shutdown and after an immediate one (a crash: recovery
// from the WAL), under a new PID.
func TestRestartKeepsPortAndData(t *testing.T) {
	t.Parallel()
	c := Own(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url, err := c.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	exec := func(sql string) error {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	if err := exec("CREATE TABLE t (n INTEGER); INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	for i, mode := range []ShutdownMode{Fast, Immediate} {
		pid := c.PID()
		start := time.Now()
		if err := c.Shutdown(mode); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(pid, 0); err == nil {
			t.Fatalf("postgres (pid %d) still runs after Shutdown", pid)
		}
		if err := exec("SELECT 1"); err == nil {
			t.Fatal("a connection succeeded while postgres was shut down")
		}
		if err := c.Restart(ctx); err != nil {
			t.Fatal(err)
		}
		t.Logf("shutdown (%v) and restart in %s", syscall.Signal(mode), time.Since(start).Round(time.Millisecond))
		if c.PID() == pid {
			t.Fatalf("same PID %d after a restart", pid)
		}
		if err := exec("INSERT INTO t VALUES (2)"); err != nil {
			t.Fatalf("after restart %d: %v", i+1, err)
		}
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil || n != 3 {
		t.Fatalf("%d rows (%v), want the 3 written across the restarts", n, err)
	}
}

// TestPostmasterOutlivesEndingThreads: threads of this process that end — as Go ends the thread of a goroutine
// that returns locked to it (ace's tmux control clients) — do not take postgres down. Linux sends the postmaster
// its parent-death signal when the thread that forked it ends; before it had a thread of its own, one such
// thread in the test process was enough to shut it down in the middle of a fleet test.
func TestPostmasterOutlivesEndingThreads(t *testing.T) {
	t.Parallel()
	c := SharedCluster(t)
	pid := c.PID()
	// Each round ends threads the scheduler was using: a goroutine per P locks its thread and returns.
	for range 200 {
		var wg sync.WaitGroup
		for range runtime.GOMAXPROCS(0) + 2 {
			wg.Go(func() {
				runtime.LockOSThread()
				time.Sleep(time.Millisecond)
			})
		}
		wg.Wait()
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the postmaster (pid %d) is gone after threads of this process ended: %v\n%s", pid, err, c.log)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatalf("postgres does not answer after threads of this process ended: %v\n%s", err, c.log)
	}
	conn.Close(ctx)
}
