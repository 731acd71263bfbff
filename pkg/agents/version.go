package agents

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// Installed is what `ace doctor` finds of an agent's CLI.
type Installed struct {
	Path    string // where the program is
	Version string // from `<program> --version`; "" when the program does not say
	Tested  string // the version the adapter was tested with; "" for a custom agent
}

// Drift reports whether the installed version differs from the tested one: its screens may have moved.
func (i Installed) Drift() bool { return i.Tested != "" && i.Version != "" && i.Version != i.Tested }

// CheckInstalled finds the agent's program and asks a built-in CLI for its version (a custom agent's program
// is only looked up: ace does not know how it tells its version, and running it may do more than print one).
func (p Profile) CheckInstalled(ctx context.Context) (Installed, error) {
	prog := p.Program()
	if prog == "" {
		return Installed{}, fmt.Errorf("agent %s has no command", p.Name)
	}
	path, err := exec.LookPath(prog)
	if err != nil {
		return Installed{}, fmt.Errorf("%s not found: %w", prog, err)
	}
	in := Installed{Path: path}
	if p.adapter == nil || p.adapter.CLI == "" {
		return in, nil
	}
	in.Tested = p.adapter.TestedVersion
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return in, fmt.Errorf("%s --version: %w", prog, err)
	}
	in.Version = ParseVersion(string(out))
	if in.Version == "" {
		return in, fmt.Errorf("%s --version printed no version: %q", prog, strings.TrimSpace(string(out)))
	}
	return in, nil
}
