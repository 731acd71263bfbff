package headless_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/testkit"
	"github.com/aceworks/ace/pkg/headless"
)

// burn is a script action that keeps a process of the agent's tree working on the CPU for secs seconds without a
// line of output: a build or a test suite that prints only when it ends.
func burn(secs int) string {
	return "sh " + testkit.BusyShell(time.Duration(secs)*time.Second) + "\n"
}

// TestSupervisorSilentButBusyIsNotIdle: a turn silent on its stream for longer than its idle timeout while its
// process tree works is not ended; it says what it found in the debug log, and the turn ends as the agent ends it.
func TestSupervisorSilentButBusyIsNotIdle(t *testing.T) {
	t.Parallel()
	// Two idle timeouts of silence with a process working on the CPU: above 5 % of a core on a loaded machine.
	tu := newTurn(t, "claude", "say Building.\n"+burn(7)+"say Built.\n")
	tu.spec.IdleTimeout = 3 * time.Second
	st := tu.wait(tu.start())
	if st.Outcome != headless.OutcomeExited || st.ExitCode != 0 {
		t.Fatalf("status %+v, want the agent's own clean exit", st)
	}
	if log := tu.file(filepath.Join(tu.dir, "debug.log")); !strings.Contains(log, "used") || !strings.Contains(log, "not idle") {
		t.Errorf("the debug log does not say the silent turn worked:\n%s", log)
	}
}

// TestSupervisorPulseKeepsASilentTurn: a turn whose agent shows nothing the supervisor can see — silent, idle on
// the CPU, waiting on its model — is not ended while ace writes its pulse (traffic through the run's proxy); once
// the pulse stops, the idle timeout ends it.
func TestSupervisorPulseKeepsASilentTurn(t *testing.T) {
	t.Parallel()
	tu := newTurn(t, "codex", "say Asking the model.\nhang\n")
	tu.spec.IdleTimeout = 500 * time.Millisecond
	tu.spec.Pulse = filepath.Join(tu.dir, "pulse")
	p := tu.start()
	started := time.Now()
	for time.Since(started) < 2*time.Second {
		if err := os.WriteFile(tu.spec.Pulse, []byte("traffic\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if !tu.running() {
			t.Fatalf("the turn ended %s in while ace's pulse went on", time.Since(started).Round(time.Millisecond))
		}
		time.Sleep(100 * time.Millisecond)
	}
	st := tu.wait(p)
	if st.Outcome != headless.OutcomeIdleTimeout {
		t.Fatalf("status %+v, want an idle timeout once the pulse stopped", st)
	}
	if log := tu.file(filepath.Join(tu.dir, "debug.log")); !strings.Contains(log, "ace saw it work") {
		t.Errorf("the debug log does not say ace's pulse kept the turn:\n%s", log)
	}
}
