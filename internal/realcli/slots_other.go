//go:build !linux

package realcli

import "testing"

// Slot limits nothing where the real-CLI tests do not run their CLIs (Enter needs Linux).
func Slot(t testing.TB) { t.Helper() }
