package sandbox

import (
	"os"
	"slices"
	"strings"
)

// hostVars are the variables of the host's environment any box may pass on as they are.
var hostVars = []string{"PATH", "LANG", "LANGUAGE", "TZ", "USER", "LOGNAME", "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR"}

// HostVars are the variables of this process's environment that a box may get as they are: where programs
// are, the locale (LC_* too) and time zone, who the user is, CA bundles. Everything else of the host's — its
// tokens above all — stays out unless the caller adds it.
func HostVars() map[string]string {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && (slices.Contains(hostVars, k) || strings.HasPrefix(k, "LC_")) {
			env[k] = v
		}
	}
	return env
}
