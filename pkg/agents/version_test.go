package agents

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/aceworks/ace/internal/realcli"
	"github.com/aceworks/ace/pkg/agents/agent"
)

// TestInstalledRealCLIs: each pinned CLI (tools/agent-clis/{oldest,newest}, what CI installs) is found by
// CheckInstalled at the path its set installs it, reports the version its set pins, and that version is inside
// the adapter's tested range. Outside CI a missing CLI skips; under CI=true it fails.
func TestInstalledRealCLIs(t *testing.T) {
	for _, name := range []string{"claude", "codex", "gemini"} {
		for _, c := range realcli.Pinned(t, name) {
			t.Run(c.Label(), func(t *testing.T) {
				t.Parallel()
				realcli.Require(t, c)
				p, _ := Builtin(name)
				p.Command = c.Bin // the set's CLI itself, not ace's wrapper in front of it nor one on PATH
				in, err := p.CheckInstalled(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if in.Version != c.Version || in.Drift() || in.Path != c.Bin {
					t.Errorf("%s: %+v, want version %s at %s inside %s", name, in, c.Version, c.Bin, p.Adapter().Tested)
				}
			})
		}
	}
}

// TestTestedRangeIsPinned: each adapter's tested range is what tools/agent-clis pins, the one place versions
// live — raise a pin and this says which adapter to change.
func TestTestedRangeIsPinned(t *testing.T) {
	for _, name := range []string{"claude", "codex", "gemini"} {
		p, _ := Builtin(name)
		oldest, err := realcli.PinnedVersion(name, "oldest")
		if err != nil {
			t.Fatal(err)
		}
		newest, err := realcli.PinnedVersion(name, "newest")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := p.Adapter().Tested, (agent.VersionRange{Oldest: oldest, Newest: newest}); got != want {
			t.Errorf("%s: adapter Tested = %+v, tools/agent-clis pins %+v", name, got, want)
		}
	}
}

// TestInstalledVersionDrift: a CLI that prints another version is found and flagged.
func TestInstalledVersionDrift(t *testing.T) {
	bin := t.TempDir()
	script := "#!/bin/sh\necho 'codex-cli 0.172.2'\n"
	if err := os.WriteFile(filepath.Join(bin, "codex"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	p, _ := Builtin("codex")
	in, err := p.CheckInstalled(context.Background())
	if err != nil || in.Version != "0.172.2" || in.Tested.Newest != "0.171.0" || !in.Drift() || in.Path != filepath.Join(bin, "codex") {
		t.Fatalf("%+v %v", in, err)
	}
	custom, _ := Resolve("mine", Override{Command: "codex --x"})
	if in, err := custom.CheckInstalled(context.Background()); err != nil || in.Version != "" || in.Drift() {
		t.Fatalf("a custom agent's program is only looked up, never run: %+v %v", in, err)
	}
}

// TestVersionFromPackage: an npm-installed CLI's version is read from its package, without running it; a
// program outside its package is asked with --version.
func TestVersionFromPackage(t *testing.T) {
	dir := t.TempDir()
	pkg := filepath.Join(dir, "node_modules", "@anthropic-ai", "claude-code")
	if err := os.MkdirAll(filepath.Join(pkg, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "package.json"), []byte(`{"name": "@anthropic-ai/claude-code", "version": "2.1.400"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	// The program itself would say something else: it must not be run.
	if err := os.WriteFile(filepath.Join(pkg, "bin", "claude.exe"), []byte("#!/bin/sh\necho 0.0.1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(pkg, "bin", "claude.exe"), filepath.Join(bin, "claude")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	p, _ := Builtin("claude")
	in, err := p.CheckInstalled(t.Context())
	if err != nil || in.Version != "2.1.400" || in.Tested.Place(in.Version) != 1 {
		t.Fatalf("installed %+v, %v: want 2.1.400 from package.json, newer than tested", in, err)
	}
}
