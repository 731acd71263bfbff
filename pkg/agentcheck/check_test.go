package agentcheck_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/realcli"
	"github.com/aceworks/ace/internal/testkit"
	"github.com/aceworks/ace/pkg/agentcheck"
	"github.com/aceworks/ace/pkg/cli"
	"github.com/aceworks/ace/pkg/config"
)

// TestMain lets the test binary stand in for ace: the check runs each phase as `ace __agents-check`, and the
// tmux panes run ace's launcher.
func TestMain(m *testing.M) { os.Exit(testkit.Main(m, nil, cli.Child)) }

// unknownDialogCLI is a "claude" that a new release might be: it tells its version, then draws a dialog ace
// has never seen and waits for a key.
const unknownDialogCLI = `#!/bin/sh
if [ "$1" = "--version" ]; then echo "9.9.9 (Claude Code)"; exit 0; fi
printf '\n  A new way to work is here.\n\n  ❯ 1. Frobnicate the workspace\n    2. Defenestrate the workspace\n\n  Enter to confirm\n'
read answer
`

// TestCheckFailsOnAnUnknownDialog: a CLI whose first screen ace cannot place fails the check at its start —
// with the screen saved where the output says, the later steps not reached, and the run's question to a
// human as the reason — instead of stalling.
func TestCheckFailsOnAnUnknownDialog(t *testing.T) {
	t.Parallel()
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "claude"), []byte(unknownDialogCLI), 0o755); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	results, dir, err := agentcheck.Run(t.Context(), agentcheck.Options{
		Agents: []string{"claude"}, Config: config.Default(), Executable: exe, Dir: t.TempDir(),
		StartupTimeout: 2 * time.Second, Timeout: time.Minute, Out: &out,
		Env: []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")},
	})
	if err != nil {
		t.Fatal(err)
	}
	agentcheck.Print(&out, results)
	t.Logf("ace agents check (files in %s):\n%s", dir, out.String())
	if len(results) != 1 || results[0].OK() {
		t.Fatalf("results %+v, want claude failing", results)
	}
	res := results[0]
	if res.Version != "9.9.9" {
		t.Errorf("version %q, want 9.9.9", res.Version)
	}
	steps := res.Steps()
	if len(steps) == 0 || steps[0].Name != agentcheck.StepStart || steps[0].OK {
		t.Fatalf("steps %+v, want the start failing first", steps)
	}
	if !strings.Contains(steps[0].Detail, "waiting_input") {
		t.Errorf("the start's failure %q does not say the run asks a human", steps[0].Detail)
	}
	screen, err := os.ReadFile(steps[0].Screen)
	if err != nil || !strings.Contains(string(screen), "Frobnicate the workspace") {
		t.Errorf("saved screen %q (%v) does not show the dialog", screen, err)
	}
	if !strings.Contains(out.String(), "screen: "+steps[0].Screen) || !strings.Contains(out.String(), "newer than the tested range") {
		t.Errorf("the table does not show the saved screen and the version's place:\n%s", out.String())
	}
	for _, s := range steps[1:] {
		if s.OK {
			t.Errorf("step %s held after a failed start", s.Name)
		}
	}
}

// TestCheckPassesOnThePinnedCLIs: ace agents check holds for every pinned release of every CLI — the oldest
// supported and the newest — installed by .ci/run into tools/agent-clis.
func TestCheckPassesOnThePinnedCLIs(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range realcli.PinnedAll(t) {
		t.Run(c.Label(), func(t *testing.T) {
			t.Parallel()
			realcli.Require(t, c)
			home := realcli.NewHome(t, c, "http://127.0.0.1:1") // for its PATH: the pinned set's binaries first
			var path string
			for _, kv := range home.Env {
				if v, ok := strings.CutPrefix(kv, "PATH="); ok {
					path = v
				}
			}
			cfg := config.Default()
			cfg.Workspace.Root = t.TempDir()
			var out bytes.Buffer
			results, _, err := agentcheck.Run(t.Context(), agentcheck.Options{
				Agents: []string{c.Name}, Config: cfg, Executable: exe, Dir: t.TempDir(), Out: &out,
				Env: []string{"PATH=" + path},
			})
			if err != nil {
				t.Fatal(err)
			}
			agentcheck.Print(&out, results)
			t.Logf("ace agents check:\n%s", out.String())
			if len(results) != 1 || !results[0].OK() || results[0].Version != c.Version {
				for _, res := range results {
					logFailedPhases(t, res)
				}
				t.Fatalf("the check of %s did not hold", c.Label())
			}
		})
	}
}

// logFailedPhases puts into the test's output what a failed phase left in its directory — the screens of its
// failed steps, the model's requests and ace's log — which goes with the test's temporary directory: a failure
// that happens once in many runs is read from the output.
func logFailedPhases(t *testing.T, res agentcheck.Result) {
	t.Helper()
	for _, rep := range res.Reports {
		if rep.OK() {
			continue
		}
		files := []string{filepath.Join(rep.Dir, "model.log"), filepath.Join(rep.Dir, "ace.log")}
		for _, s := range rep.Steps {
			if s.Screen != "" {
				files = append([]string{s.Screen}, files...)
			}
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			if len(b) > 24<<10 {
				b = b[len(b)-24<<10:] // its end: what led to the failure
			}
			t.Logf("phase %s, %s:\n%s", rep.Phase, filepath.Base(f), b)
		}
	}
}
