package headless_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/headless"
	"github.com/aceworks/ace/pkg/sandbox"
	"github.com/aceworks/ace/pkg/sandbox/sandboxtest"
)

// boxed puts tu's agent in a box that sees its working directory (and the script, read-only), or skips the test
// where boxes cannot be built.
func boxed(t *testing.T, tu *turn) {
	t.Helper()
	h := sandboxtest.Host(t)
	exe, _ := os.Executable()
	home := filepath.Join(tu.dir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	argv := append([]string{sandbox.SelfPath}, tu.spec.Argv[1:]...)
	argv = append(argv, "--state", filepath.Join(tu.spec.Dir, "fake.state")) // the script's directory is read-only
	box, err := h.Wrap(sandbox.Spec{WorkDir: tu.spec.Dir, Home: home, ReadOnly: []string{filepath.Join(tu.dir, "script.txt")},
		Env: tu.spec.Env, Self: exe}, argv)
	if err != nil {
		t.Fatal(err)
	}
	tu.spec.Argv, tu.spec.Env, tu.spec.Boxed = box.Argv, box.Env, true
}

// TestSupervisorBoxedTurn: a boxed agent gets its variables and secrets and nothing of the supervisor's
// environment (ace's own, tokens and all), and its turn is read as any other.
func TestSupervisorBoxedTurn(t *testing.T) {
	t.Setenv("ACE_HOST_ONLY", "host-canary-value") // the supervisor inherits it; the box must not
	tu := newTurn(t, "claude", "sh echo plain=$PLAIN secret=$TEST_SECRET host=${ACE_HOST_ONLY:-absent} home=$HOME\ndone ok\n")
	boxed(t, tu)
	st := tu.wait(tu.start())
	if st.Outcome != headless.OutcomeExited || st.ExitCode != 0 || st.SessionID == "" {
		t.Fatalf("status %+v", st)
	}
	raw := tu.file(st.Transcript)
	want := "plain=plain-value secret=[redacted] host=absent home=" + filepath.Join(tu.dir, "home")
	if !strings.Contains(raw, want) {
		t.Errorf("transcript does not show %q:\n%s", want, raw)
	}
}

// TestSupervisorBoxedStop: stopping a boxed turn (ace stop, a timeout) reaches the agent's processes, whose
// SIGTERM handler saves its work; bwrap, signalled, would have killed them at once.
func TestSupervisorBoxedStop(t *testing.T) {
	t.Parallel()
	tu := newTurn(t, "gemini", "sh trap 'echo saved > saved; exit 0' TERM; touch ready; while :; do sleep 0.05; done\nhang\n")
	tu.spec.KillGrace = 10 * time.Second
	boxed(t, tu)
	p := tu.start()
	deadline := time.Now().Add(30 * time.Second)
	for _, err := os.Stat(filepath.Join(tu.spec.Dir, "ready")); err != nil; _, err = os.Stat(filepath.Join(tu.spec.Dir, "ready")) {
		if time.Now().After(deadline) {
			t.Fatal("the agent never got to work")
		}
		time.Sleep(20 * time.Millisecond) // a file has no change event to wait on
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if st := tu.wait(p); st.Outcome != headless.OutcomeStopped {
		t.Fatalf("status %+v, want stopped", st)
	}
	if got := strings.TrimSpace(tu.file(filepath.Join(tu.spec.Dir, "saved"))); got != "saved" {
		t.Fatalf("the agent's handler did not run: %q", got)
	}
}
