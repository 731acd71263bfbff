package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Installed is what `ace doctor` finds of an agent's CLI.
type Installed struct {
	Path    string       // where the program is
	Version string       // from `<program> --version`; "" when the program does not say
	Tested  VersionRange // the releases ace was tested with; zero for a custom agent
}

// VersionRange is the oldest and the newest release of a CLI that ace's tests run.
type VersionRange struct{ Oldest, Newest string }

func (r VersionRange) String() string {
	if r.Oldest == r.Newest {
		return r.Oldest
	}
	return r.Oldest + "–" + r.Newest
}

// Place says where version v stands against the range: -1 older than the oldest, 0 inside, +1 newer than the
// newest.
func (r VersionRange) Place(v string) int {
	switch {
	case CompareVersions(v, r.Oldest) < 0:
		return -1
	case CompareVersions(v, r.Newest) > 0:
		return 1
	}
	return 0
}

// Drift reports whether the installed version is outside the tested range: its screens may have moved.
func (i Installed) Drift() bool {
	return i.Tested.Oldest != "" && i.Version != "" && i.Tested.Place(i.Version) != 0
}

// CompareVersions orders two dotted versions ("2.1.197" < "2.1.331" < "2.10.0") number by number; a part that
// is not a number (a pre-release suffix) compares as text after the numbers.
func CompareVersions(a, b string) int {
	pa, pb := strings.FieldsFunc(a, isVersionSep), strings.FieldsFunc(b, isVersionSep)
	for i := 0; i < max(len(pa), len(pb)); i++ {
		x, y := "0", "0"
		if i < len(pa) {
			x = pa[i]
		}
		if i < len(pb) {
			y = pb[i]
		}
		nx, ex := strconv.Atoi(x)
		ny, ey := strconv.Atoi(y)
		switch {
		case ex == nil && ey == nil && nx != ny:
			return cmp.Compare(nx, ny)
		case (ex == nil) != (ey == nil):
			if ex == nil {
				return 1 // 1.0.0 > 1.0.0-beta
			}
			return -1
		case ex != nil && x != y:
			return strings.Compare(x, y)
		}
	}
	return 0
}

func isVersionSep(r rune) bool { return r == '.' || r == '-' || r == '+' }

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
	in.Tested = p.adapter.Tested
	if v := packageVersion(path, p.adapter.Package); v != "" {
		in.Version = v
		return in, nil
	}
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

// VersionCache remembers CheckInstalled per program and its modification time, so that ten runs starting at
// once ask the CLI once, and an upgrade in place is asked again.
type VersionCache struct {
	mu   sync.Mutex
	seen map[string]Installed // by path and mtime
}

// Of is p's installed version: from the cache when its program has not changed since it was asked.
func (c *VersionCache) Of(ctx context.Context, p Profile) (Installed, error) {
	path, err := exec.LookPath(p.Program())
	if err != nil {
		return Installed{}, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return Installed{}, err
	}
	key := path + "@" + fi.ModTime().String()
	c.mu.Lock()
	in, ok := c.seen[key]
	c.mu.Unlock()
	if ok {
		return in, nil
	}
	in, err = p.CheckInstalled(ctx)
	if err != nil {
		return in, err
	}
	c.mu.Lock()
	if c.seen == nil {
		c.seen = map[string]Installed{}
	}
	c.seen[key] = in
	c.mu.Unlock()
	return in, nil
}

// packageVersion reads the version of an npm-installed CLI from its package's package.json, found above the
// program the bin link leads to: no process to start (a Node CLI's --version takes seconds on a loaded machine,
// and a run starting its agent should not wait for it). "" when path is not in the package pkg.
func packageVersion(path, pkg string) string {
	if pkg == "" {
		return ""
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return ""
	}
	dir := filepath.Dir(real)
	for range 4 {
		b, err := os.ReadFile(filepath.Join(dir, "package.json"))
		if err == nil {
			var m struct{ Name, Version string }
			if json.Unmarshal(b, &m) == nil && m.Name == pkg {
				return m.Version
			}
		}
		dir = filepath.Dir(dir)
	}
	return ""
}
