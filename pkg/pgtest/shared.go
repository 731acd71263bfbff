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
	if errors.Is(shared.err, ErrNotInstalled) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v: CI must run the PostgreSQL tests", shared.err)
		}
		t.Skip(shared.err)
	}
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.cluster
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
