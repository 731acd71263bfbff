package realcli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/netns"
)

// envInside marks a test binary re-executed inside a namespace by Enter.
const envInside = "ACE_REALCLI_NETNS"

// Enter runs the calling test inside a fresh namespace whose only network is loopback, so a CLI can reach a
// server the test starts on 127.0.0.1 and nothing else. Outside, it re-executes the test binary for this one
// test under `unshare -rn --pid --fork --kill-child --mount-proc`, reports the child's outcome as this test's,
// and returns false: the caller returns at once. Inside, it brings lo up and returns true: the test goes on and
// starts everything it needs (model server, fake GitHub, git server, tmux) in this process. The PID namespace
// ends every process the test left behind (codex's app-server daemon, gemini's node) when the test exits.
//
//	if !realcli.Enter(t) {
//		return
//	}
func Enter(t *testing.T) bool {
	t.Helper()
	if os.Getenv(envInside) != "" {
		if err := netns.LoopbackUp(); err != nil {
			t.Fatalf("realcli: bring up lo in the test namespace: %v", err)
		}
		return true
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("realcli: locate the test binary: %v", err)
	}
	args := []string{"-test.run=" + runPattern(t.Name()), "-test.v", "-test.count=1"}
	if d, ok := t.Deadline(); ok {
		args = append(args, "-test.timeout="+time.Until(d).Round(time.Second).String())
	}
	cmd, err := netns.Command(t.Context(), exe, args...)
	if err != nil {
		missing(t, err.Error()+": it runs the real-CLI tests in a loopback-only network namespace")
		return false
	}
	cmd.Env = append(os.Environ(), envInside+"=1")
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start).Round(time.Millisecond)
	text := string(out)
	var exit *exec.ExitError
	switch {
	case err == nil && strings.Contains(text, "--- SKIP: "+t.Name()+" "):
		t.Skipf("realcli: skipped inside the namespace (%s):\n%s", took, text)
	case err == nil && strings.Contains(text, "--- PASS: "+t.Name()+" "):
		if testing.Verbose() {
			t.Logf("realcli: passed inside the namespace in %s:\n%s", took, text)
		}
	case err == nil:
		t.Fatalf("realcli: the test did not run inside the namespace (%s):\n%s", took, text)
	case errors.As(err, &exit) && strings.Contains(text, "=== RUN"):
		t.Fatalf("realcli: failed inside the namespace (%s, %v):\n%s", took, err, text)
	default:
		missing(t, fmt.Sprintf("cannot create a network namespace with unshare: %v: %s", err, strings.TrimSpace(text)))
	}
	return false
}

// runPattern matches exactly the test named name (subtests included) for -test.run.
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}
