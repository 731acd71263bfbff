//go:build !linux

package realcli

import (
	"context"
	"testing"
)

// Slot limits nothing where the real-CLI tests do not run their CLIs (Enter needs Linux).
func Slot(t testing.TB) { t.Helper() }

// holdSlot holds nothing where Slot limits nothing.
func holdSlot(context.Context) (func(), string, error) { return func() {}, "", nil }
