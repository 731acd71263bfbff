//go:build !linux

package realcli

import "testing"

// Enter needs Linux network namespaces; elsewhere the real-CLI tests are missing their environment.
func Enter(t *testing.T) bool {
	t.Helper()
	missing(t, "real-CLI tests need Linux network namespaces (unshare -rn)")
	return false
}
