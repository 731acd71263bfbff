package agents

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestInstalledRealCLIs: the real CLIs, where installed, report the version their adapter was tested with (CI
// installs the pinned ones; a mismatch means an adapter's TestedVersion and screens are due). Outside CI a
// missing CLI skips; under CI=true it fails.
func TestInstalledRealCLIs(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"claude", "codex", "gemini"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, _ := Builtin(name)
			if _, err := exec.LookPath(p.Adapter().CLI); err != nil {
				if os.Getenv("CI") == "true" {
					t.Fatalf("%s is not installed (CI installs the pinned CLIs: %s)", p.Adapter().CLI, p.InstallHint)
				}
				t.Skipf("%s is not installed: %s", p.Adapter().CLI, p.InstallHint)
			}
			in, err := p.CheckInstalled(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if in.Version != p.Adapter().TestedVersion || in.Drift() {
				t.Errorf("%s --version says %q, the adapter was tested with %q", name, in.Version, in.Tested)
			}
		})
	}
}

// TestInstalledVersionDrift: a CLI that prints another version is found and flagged.
func TestInstalledVersionDrift(t *testing.T) {
	bin := t.TempDir()
	script := "#!/bin/sh\necho 'codex-cli 0.170.2'\n"
	if err := os.WriteFile(filepath.Join(bin, "codex"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	p, _ := Builtin("codex")
	in, err := p.CheckInstalled(context.Background())
	if err != nil || in.Version != "0.170.2" || in.Tested != "0.169.0" || !in.Drift() || in.Path != filepath.Join(bin, "codex") {
		t.Fatalf("%+v %v", in, err)
	}
	custom, _ := Resolve("mine", Override{Command: "codex --x"})
	if in, err := custom.CheckInstalled(context.Background()); err != nil || in.Version != "" || in.Drift() {
		t.Fatalf("a custom agent's program is only looked up, never run: %+v %v", in, err)
	}
}
