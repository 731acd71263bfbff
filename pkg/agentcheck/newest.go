package agentcheck

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/clirelease"
)

// A canary before an upgrade: `ace agents check --newest` asks the npm registry for each CLI's newest release,
// installs it into a prefix of ace's own under its root (never the user's global install, nor their PATH), and
// checks that release as it checks an installed one. A release downloaded once is checked again without the
// network (the registry's answer aside); ace doctor says when a newer release is out and whether it held here.

// Registry asks npm about the CLIs' packages and installs them into scratch prefixes.
type Registry struct {
	// NPM is the npm program ("npm" on PATH when empty).
	NPM string
	// Dir holds one prefix per package and version: <Dir>/<package>@<version>.
	Dir string
	// Timeout bounds one registry question (a minute when 0); an install gets ten times as long.
	Timeout time.Duration
}

// NewestDir is where ace keeps the newest releases it downloaded, under its root.
func NewestDir(root string) string { return filepath.Join(root, "agents-newest") }

// ErrRegistry is the error (wrapped) of a registry that did not answer: the newest release is unknown.
var ErrRegistry = errors.New("the npm registry did not answer")

var semver = regexp.MustCompile(`^\d+\.\d+\.\d+[0-9A-Za-z.+-]*$`)

func (g Registry) npm(ctx context.Context, timeout time.Duration, args ...string) (string, error) {
	prog := g.NPM
	if prog == "" {
		prog = "npm"
	}
	if timeout <= 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, args...)
	// No retries with backoff: an unreachable registry is said at once.
	cmd.Env = append(os.Environ(), "npm_config_fetch_retries=0", "npm_config_update_notifier=false",
		"npm_config_fund=false", "npm_config_audit=false")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("npm %s: %w: %s", strings.Join(args, " "), err, lastLines(string(ee.Stderr), 3))
		}
		return "", fmt.Errorf("npm %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

// Latest is the newest release of pkg on the registry.
func (g Registry) Latest(ctx context.Context, pkg string) (string, error) {
	v, err := g.npm(ctx, g.Timeout, "view", pkg, "version")
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrRegistry, err)
	}
	if !semver.MatchString(v) {
		return "", fmt.Errorf("%w: npm view %s version said %q", ErrRegistry, pkg, v)
	}
	return v, nil
}

// Prefix is where release version of pkg is (or would be) installed.
func (g Registry) Prefix(pkg, version string) string {
	return filepath.Join(g.Dir, strings.ReplaceAll(pkg, "/", "+")+"@"+version)
}

// Install puts release version of pkg into its prefix, unless it is there already (clirelease.Installer: into a
// temporary directory renamed into place once whole), and returns the directory of its programs
// (node_modules/.bin), to put first on the check's PATH.
func (g Registry) Install(ctx context.Context, pkg, version, program string) (bin string, err error) {
	in := clirelease.Installer{NPM: g.NPM, Timeout: 10 * max(g.Timeout, time.Minute)}
	r, err := in.Install(ctx, g.Prefix(pkg, version), pkg, program, version)
	if err != nil {
		return "", err
	}
	return filepath.Dir(r.Program), nil
}

// Canary is the newest release of one agent's CLI, ready to check.
type Canary struct {
	Agent, Package, Version string
	// Bin holds the release's programs; Downloaded says it was installed just now (else it was there).
	Bin        string
	Downloaded bool
}

// Canaries finds and installs the newest release of each agent's CLI. An agent without a package is an error
// naming it; the registry not answering (ErrRegistry) stops all of them.
func (g Registry) Canaries(ctx context.Context, profiles []agents.Profile) ([]Canary, error) {
	var out []Canary
	for _, p := range profiles {
		a := p.Adapter()
		if Checkable(p) != nil || a.Package == "" {
			return nil, fmt.Errorf("agent %s has no npm package ace can check (claude, codex, gemini)", p.Name)
		}
		v, err := g.Latest(ctx, a.Package)
		if err != nil {
			return nil, err
		}
		_, statErr := os.Stat(filepath.Join(g.Prefix(a.Package, v), "node_modules", ".bin", a.CLI))
		bin, err := g.Install(ctx, a.Package, v, a.CLI)
		if err != nil {
			return nil, err
		}
		out = append(out, Canary{Agent: p.Name, Package: a.Package, Version: v, Bin: bin, Downloaded: statErr != nil})
	}
	return out, nil
}

// Verdict is what a canary's check says about upgrading to its release.
func (c Canary) Verdict(res Result) string {
	install := "npm install -g " + c.Package + "@" + c.Version
	if res.OK() && res.Version == c.Version {
		return fmt.Sprintf("%s %s: safe to upgrade (every check held): %s", c.Agent, c.Version, install)
	}
	var failed []string
	for _, s := range res.Steps() {
		if !s.OK {
			failed = append(failed, s.Name)
		}
	}
	for _, r := range res.Reports {
		if r.Error != "" {
			failed = append(failed, r.Phase)
		}
	}
	return fmt.Sprintf("%s %s: not safe to upgrade yet: %s did not hold (the screens above show what it drew)",
		c.Agent, c.Version, strings.Join(failed, ", "))
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " / ")
}
