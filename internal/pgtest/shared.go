package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"
)

// shared is the cluster of this test binary: started by the first test that asks for a database, stopped by
// Main when the tests end. A test binary is one package, so this is one cluster per package.
var shared struct {
	once    sync.Once
	cluster *Cluster
	err     error
	took    time.Duration
}

// Main runs the tests of a package and then stops the cluster they started, if any. Use it in TestMain.
func Main(m *testing.M) int {
	code := m.Run()
	if shared.cluster != nil {
		if err := shared.cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// SharedCluster returns this package's cluster, starting it on first use. Without PostgreSQL installed the test is
// skipped, or fails when the environment says CI=true.
func SharedCluster(t testing.TB) *Cluster {
	t.Helper()
	shared.once.Do(func() {
		start := time.Now()
		shared.cluster, shared.err = Start(context.Background())
		shared.took = time.Since(start)
	})
	skipOrFail(t, shared.err)
	return shared.cluster
}

// Own starts a cluster for t alone, stopped (by PID) and removed when t ends: for a test that shuts PostgreSQL
// down or restarts it, which would pull the shared cluster from under the package's other tests. Unlike the
// shared one it is crash-safe: what a commit wrote survives an Immediate shutdown, as on a real server. Like
// SharedCluster, it skips t where PostgreSQL is not installed (fails it when CI=true).
func Own(t testing.TB) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := startCluster(ctx, true, nil)
	skipOrFail(t, err)
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// skipOrFail ends t when starting a cluster failed: skipped when PostgreSQL is not installed (unless CI=true
// says it must be), failed otherwise.
func skipOrFail(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, ErrNotInstalled) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v: CI must run the PostgreSQL tests", err)
		}
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// URL returns the URL of a new, empty database of its own for t in the package's cluster (see SharedCluster).
func URL(t testing.TB) string {
	t.Helper()
	c := SharedCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url, err := c.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return url
}

// StartTime is how long starting the shared cluster took (zero before it started), for tests that report it.
func StartTime() time.Duration { return shared.took }
