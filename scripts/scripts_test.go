package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCodexGH runs the real script with a fake codex first on PATH.
func TestCodexGH(t *testing.T) {
	bin := t.TempDir()
	fake := "#!/bin/sh\necho \"TOKEN=$GITHUB_TOKEN\"\necho \"MCP=${GITHUB_MCP_TOKEN_ENV:-}\"\nfor a in \"$@\"; do echo \"ARG=$a\"; done\n"
	if err := os.WriteFile(filepath.Join(bin, "codex"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := Install(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	run := func(env ...string) string {
		cmd := exec.Command(filepath.Join(dir, "codex-gh"), "--model", "o3", "say \"hi\" $(x)", "")
		cmd.Env = append([]string{"PATH=" + bin + ":/usr/bin:/bin"}, env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("codex-gh: %v\n%s", err, out)
		}
		return string(out)
	}
	out := run("GITHUB_CONTROL_API_KEY=ctl-key", "GITHUB_MCP_TOKEN_ENV=GITHUB_TOKEN")
	for _, want := range []string{"TOKEN=ctl-key", "MCP=GITHUB_TOKEN", "ARG=--model", "ARG=o3", "ARG=say \"hi\" $(x)", "ARG=\n"} {
		if !strings.Contains(out+"\n", want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if out := run("GITHUB_TOKEN=own", "GITHUB_CONTROL_API_KEY=ctl-key"); !strings.Contains(out, "TOKEN=own") {
		t.Errorf("an existing GITHUB_TOKEN was replaced:\n%s", out)
	}
	if sc, err := exec.LookPath("shellcheck"); err == nil {
		if out, err := exec.Command(sc, "codex-gh").CombinedOutput(); err != nil {
			t.Errorf("shellcheck: %s", out)
		}
	}
}
