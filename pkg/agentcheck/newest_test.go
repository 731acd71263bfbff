package agentcheck_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/agentcheck"
	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
)

// fakeNPM is an npm whose registry has release 9.9.9 of every package, which installs as the CLI at cli: the
// registry is beyond this machine's reach, npm is the seam. Every call is logged.
func fakeNPM(t *testing.T, cli string) (npm, log string) {
	t.Helper()
	dir := t.TempDir()
	npm, log = filepath.Join(dir, "npm"), filepath.Join(dir, "npm.log")
	script := fmt.Sprintf(`#!/bin/sh
echo "$*" >> %q
case "$1" in
view) echo 9.9.9 ;;
install) m="$3/node_modules/@anthropic-ai/claude-code"; mkdir -p "$m" "$3/node_modules/.bin" &&
	printf '{"name": "@anthropic-ai/claude-code", "version": "9.9.9"}' > "$m/package.json" &&
	cp %q "$3/node_modules/.bin/claude" ;;
*) exit 1 ;;
esac
`, log, cli)
	if err := os.WriteFile(npm, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return npm, log
}

// TestCanaryShowsTheScreensThatFailed: the newest release on the registry (here a "claude" that draws a dialog
// ace never saw) is installed into ace's own prefix, checked, and called not safe to upgrade with the failed
// screen; checked again, it is not downloaded again.
func TestCanaryShowsTheScreensThatFailed(t *testing.T) {
	t.Parallel()
	cli := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(cli, []byte(unknownDialogCLI), 0o755); err != nil {
		t.Fatal(err)
	}
	npm, log := fakeNPM(t, cli)
	root := t.TempDir()
	reg := agentcheck.Registry{NPM: npm, Dir: agentcheck.NewestDir(root)}
	p, _ := agents.Builtin("claude")
	canaries, err := reg.Canaries(t.Context(), []agents.Profile{p})
	if err != nil || len(canaries) != 1 || canaries[0].Version != "9.9.9" || !canaries[0].Downloaded ||
		!strings.HasPrefix(canaries[0].Bin, root) {
		t.Fatalf("canaries %+v, %v: want claude 9.9.9 downloaded under ace's root", canaries, err)
	}
	c := canaries[0]
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	results, _, err := agentcheck.Run(t.Context(), agentcheck.Options{
		Agents: []string{"claude"}, Config: config.Default(), Executable: exe, Dir: t.TempDir(),
		StartupTimeout: 2 * time.Second, Timeout: time.Minute, Out: &out,
		Env: []string{"PATH=" + c.Bin + string(os.PathListSeparator) + os.Getenv("PATH")},
	})
	if err != nil || len(results) != 1 {
		t.Fatalf("results %+v, %v", results, err)
	}
	agentcheck.Print(&out, results)
	verdict := c.Verdict(results[0])
	t.Logf("%s\n%s", out.String(), verdict)
	if !strings.Contains(verdict, "not safe to upgrade") || !strings.Contains(verdict, "start") ||
		!strings.Contains(out.String(), "screen: ") {
		t.Errorf("verdict %q: want not safe, naming the start, with its screen above", verdict)
	}
	again, err := reg.Canaries(t.Context(), []agents.Profile{p})
	if err != nil || len(again) != 1 || again[0].Downloaded || again[0].Bin != c.Bin {
		t.Fatalf("again: %+v, %v: want the release already there", again, err)
	}
	b, _ := os.ReadFile(log)
	if n := strings.Count(string(b), "install "); n != 1 {
		t.Errorf("npm installed %d times, want once:\n%s", n, b)
	}
}

// TestCanaryRegistryUnreachable: with a registry that does not answer, the newest release is unknown and the
// canary says so at once (the real npm, pointed at a closed port of this machine).
func TestCanaryRegistryUnreachable(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not installed")
	}
	t.Setenv("npm_config_registry", "http://127.0.0.1:9/")
	t.Setenv("npm_config_cache", t.TempDir())
	reg := agentcheck.Registry{Dir: t.TempDir(), Timeout: 30 * time.Second}
	p, _ := agents.Builtin("codex")
	start := time.Now()
	_, err := reg.Canaries(t.Context(), []agents.Profile{p})
	if !errors.Is(err, agentcheck.ErrRegistry) || !strings.Contains(err.Error(), "@openai/codex") {
		t.Fatalf("err %v, want the registry named as not answering for @openai/codex", err)
	}
	t.Logf("%v (after %s)", err, time.Since(start).Round(time.Millisecond))
}
