// Package clirelease keeps releases of the agent CLIs besides the one installed: `ace agents install
// claude@2.1.331` installs that release of the CLI's npm package into a directory of its own under ace's root, and
// ace eval runs it (claude@2.1.331 in --agents) — or finds it in a directory that holds it already (the
// repository's pinned sets, tools/agent-clis/{oldest,newest}), so that an eval of two releases needs no network
// when they are there.
package clirelease

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Release is one release of an agent CLI, installed.
type Release struct {
	Package, Version string
	// Dir is its install prefix: Dir/node_modules/<Package> is the package.
	Dir string
	// Program is the CLI's executable, Dir/node_modules/.bin/<cli>.
	Program string
}

// Dir is where ace keeps release version of agent's CLI: <root>/clis/<agent>@<version>.
func Dir(root, agent, version string) string {
	return filepath.Join(root, "clis", agent+"@"+version)
}

// ErrNotFound is Find's error (wrapped) when no directory holds the release.
var ErrNotFound = errors.New("release not found")

var versionRE = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+([+-][0-9A-Za-z.-]+)?$`)

// CheckVersion refuses a version npm would read as a range or a tag: ace keeps exact releases only.
func CheckVersion(v string) error {
	if !versionRE.MatchString(v) {
		return fmt.Errorf("%q is not a release number (2.1.331)", v)
	}
	return nil
}

// Find is release version of pkg in the first of dirs that holds it: an install prefix whose
// node_modules/<pkg>/package.json names that version and whose node_modules/.bin/<cli> is there. A directory
// holding another release of pkg is passed over (the error lists what each held).
func Find(dirs []string, pkg, cli, version string) (Release, error) {
	var held []string
	for _, d := range dirs {
		got, err := packageVersion(d, pkg)
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				held = append(held, fmt.Sprintf("%s: %v", d, err))
			}
			continue
		}
		if got != version {
			held = append(held, fmt.Sprintf("%s holds %s", d, got))
			continue
		}
		r := Release{Package: pkg, Version: version, Dir: d, Program: filepath.Join(d, "node_modules", ".bin", cli)}
		if fi, err := os.Stat(r.Program); err != nil || fi.IsDir() {
			return Release{}, fmt.Errorf("%s holds %s@%s but no program %s", d, pkg, version, r.Program)
		}
		return r, nil
	}
	why := "none of " + strings.Join(dirs, ", ") + " holds it"
	if len(held) > 0 {
		why += " (" + strings.Join(held, "; ") + ")"
	}
	return Release{}, fmt.Errorf("%w: %s@%s: %s", ErrNotFound, pkg, version, why)
}

// packageVersion is the version of pkg installed in the prefix dir.
func packageVersion(dir, pkg string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "node_modules", pkg, "package.json"))
	if err != nil {
		return "", err
	}
	var m struct{ Name, Version string }
	if err := json.Unmarshal(b, &m); err != nil {
		return "", fmt.Errorf("its package.json: %w", err)
	}
	if m.Name != pkg {
		return "", fmt.Errorf("its package.json names %q, not %s", m.Name, pkg)
	}
	return m.Version, nil
}

// Installer installs releases with npm.
type Installer struct {
	// NPM is the npm program ("npm" on PATH when empty).
	NPM string
	// Timeout bounds one install (10 minutes when 0).
	Timeout time.Duration
}

// Install puts release version of pkg into dir, an install prefix of its own, and returns it: npm installs into
// a temporary directory beside dir, renamed into place once the release is there whole, so that dir never holds
// half an install (an install cut short leaves only the temporary directory, removed). A dir that holds the
// release already is returned as it is.
func (in Installer) Install(ctx context.Context, dir, pkg, cli, version string) (Release, error) {
	if err := CheckVersion(version); err != nil {
		return Release{}, err
	}
	if r, err := Find([]string{dir}, pkg, cli, version); err == nil {
		return r, nil
	}
	npm := in.NPM
	if npm == "" {
		npm = "npm"
	}
	prog, err := exec.LookPath(npm)
	if err != nil {
		return Release{}, fmt.Errorf("install %s@%s: npm is needed and was not found (%w): install Node.js and npm, "+
			"or give a directory that holds the release", pkg, version, err)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return Release{}, err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".*")
	if err != nil {
		return Release{}, err
	}
	defer os.RemoveAll(tmp)
	timeout := in.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	ictx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	args := []string{"install", "--prefix", tmp, "--no-audit", "--no-fund", "--no-save", pkg + "@" + version}
	cmd := exec.CommandContext(ictx, prog, args...)
	cmd.Env = append(os.Environ(), "npm_config_update_notifier=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		return Release{}, fmt.Errorf("%s %s: %w: %s", npm, strings.Join(args, " "), err, lastLines(string(out), 5))
	}
	if _, err := Find([]string{tmp}, pkg, cli, version); err != nil {
		return Release{}, fmt.Errorf("%s %s installed something else: %w", npm, strings.Join(args, " "), err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another ace installed it meanwhile: theirs is as good.
		if r, ferr := Find([]string{dir}, pkg, cli, version); ferr == nil {
			return r, nil
		}
		return Release{}, fmt.Errorf("install %s@%s into %s: %w", pkg, version, dir, err)
	}
	return Find([]string{dir}, pkg, cli, version)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " / ")
}
