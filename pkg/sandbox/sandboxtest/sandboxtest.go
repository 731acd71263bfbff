// Package sandboxtest finds bubblewrap for tests that build boxes.
package sandboxtest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/sandbox"
)

// Host is bubblewrap here, or the test is skipped with the reason; under CI=true (where .ci/run installs
// bubblewrap) it fails instead, so that CI never passes by skipping.
func Host(t testing.TB) *sandbox.Host {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, err := sandbox.Detect(ctx)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v (CI=true: failing instead of skipping)", err)
		}
		t.Skip(err)
	}
	return h
}
