package config

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestSandboxLayers(t *testing.T) {
	t.Parallel()
	cfg, path, err := loadFile(t, `[sandbox]
read_only = ["~/go/pkg/mod"]
allow = ["registry.example"]
forward = [11434]

[agents.claude.sandbox]
allow = ["gateway.example:443", "registry.example"]

[agents.mine]
command = "mine"
[agents.mine.sandbox]
mode = "off"

[repos."acme/widgets".sandbox]
mode = "on"
read_only = ["/opt/sdk"]
`)
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Dir(path)
	got := cfg.SandboxFor("claude", "acme/widgets")
	if got.Mode != SandboxOn || !slices.Equal(got.ReadOnly, []string{filepath.Join(home, "go/pkg/mod"), "/opt/sdk"}) ||
		!slices.Equal(got.Allow, []string{"registry.example", "gateway.example:443"}) || !slices.Equal(got.Forward, []int{11434}) {
		t.Errorf("claude on acme/widgets: %+v", got)
	}
	if m := cfg.SandboxFor("mine", "acme/other").Mode; m != SandboxOff {
		t.Errorf("mine's mode %q, want its own off", m)
	}
	if m := cfg.SandboxFor("mine", "acme/widgets").Mode; m != SandboxOn {
		t.Errorf("mine on acme/widgets: mode %q, want the repository's on", m)
	}
	if m := Default().SandboxFor("codex", "x/y").Mode; m != SandboxAuto {
		t.Errorf("default mode %q, want auto", m)
	}
}

func TestSandboxErrorsNameFileLineAndKey(t *testing.T) {
	t.Parallel()
	_, path, err := loadFile(t, `[sandbox]
mode = "maybe"
read_only = ["relative/dir"]
allow = ["exa mple.com"]
forward = [0]

[agents.claude.sandbox]
mode = "sometimes"

[repos."acme/widgets".sandbox]
allow = ["*."]
`)
	if err == nil || !errors.Is(err, ErrInvalid) {
		t.Fatalf("Load = %v, want an invalid configuration", err)
	}
	for _, want := range []string{
		path + `:2: sandbox.mode: "maybe" is not "auto", "on" or "off"`,
		path + `:3: sandbox.read_only[0]: "relative/dir" must be an absolute path`,
		path + `:4: sandbox.allow[0]: allow "exa mple.com": bad host`,
		path + `:5: sandbox.forward[0]: 0 is not a port`,
		path + `:8: agents.claude.sandbox.mode: "sometimes" is not`,
		path + `:11: repos."acme/widgets".sandbox.allow[0]:`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Load error:\n%v\nwant it to contain %q", err, want)
		}
	}
}

// TestRepositoryFileCannotTouchItsSandbox: the box is the operator's to open, not the repository's.
func TestRepositoryFileCannotTouchItsSandbox(t *testing.T) {
	t.Parallel()
	_, err := ParseWorkflow(".ace/workflow.toml", []byte("verify = \"make test\"\n\n[sandbox]\nmode = \"off\"\n"))
	if err == nil || !strings.Contains(err.Error(), ".ace/workflow.toml:3: sandbox: a repository's own file cannot change") {
		t.Fatalf("ParseWorkflow = %v, want the [sandbox] table refused with its line", err)
	}
}
