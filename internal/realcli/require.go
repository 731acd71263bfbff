// Package realcli runs the real agent CLIs (claude, codex, gemini) in tests: it finds the pinned binaries,
// builds a fresh HOME holding only what a user has, and runs each test in a loopback-only network namespace
// where the CLIs talk to pkg/modelserver instead of their vendors.
package realcli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// pinnedDir holds the pinned sets of CLI versions the tests run (package.json each), relative to the module root.
const pinnedDir = "tools/agent-clis"

// npmPackage is each CLI's npm package in package.json.
var npmPackage = map[string]string{
	"claude": "@anthropic-ai/claude-code",
	"codex":  "@openai/codex",
	"gemini": "@google/gemini-cli",
}

// minNode is the Node major version each pinned CLI's package.json "engines" asks for.
var minNode = map[string]int{"claude": 18, "codex": 16, "gemini": 20}

// nodeMajor returns `node --version` and its major number (0 when unknown).
func nodeMajor() (string, int) {
	out, err := exec.Command("node", "--version").Output()
	if err != nil {
		return "unknown", 0
	}
	v := strings.TrimSpace(string(out))
	major, _ := strconv.Atoi(strings.SplitN(strings.TrimPrefix(v, "v"), ".", 2)[0])
	return v, major
}

// pinnedSets are the folders under pinnedDir that pin a set of CLI versions: the oldest release of each CLI ace
// supports and the newest one tested. The real-CLI tests run against both.
var pinnedSets = []string{"oldest", "newest"}

// CLI is one pinned version of one agent CLI: the tests run a case for each (see Pinned).
type CLI struct {
	Name    string // claude, codex or gemini
	Set     string // the pinned set it comes from (oldest, newest)
	Version string // the version that set pins
	Bin     string // the binary the set installs (it need not exist: Require checks)
}

// Label names the CLI in a subtest: "claude@2.1.197".
func (c CLI) Label() string { return c.Name + "@" + c.Version }

// Pinned lists the pinned versions of cli, oldest first; a version pinned by both sets is listed once, so a CLI
// whose newest release is the oldest supported one costs one case, not two. A missing pin file fails the test.
func Pinned(t testing.TB, cli string) []CLI {
	t.Helper()
	if _, ok := npmPackage[cli]; !ok {
		t.Fatalf("realcli: unknown CLI %q (want claude, codex or gemini)", cli)
	}
	var out []CLI
	for _, set := range pinnedSets {
		c, err := PinnedIn(cli, set)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) > 0 && out[len(out)-1].Version == c.Version {
			continue
		}
		out = append(out, c)
	}
	return out
}

// PinnedIn is the version of cli that set pins (oldest, newest), outside a test (bench/live); its Bin need not
// exist. It finds the pins from the working directory, which must be in the module.
func PinnedIn(cli, set string) (CLI, error) {
	root, err := moduleRoot()
	if err != nil {
		return CLI{}, err
	}
	v, err := PinnedVersion(cli, set)
	if err != nil {
		return CLI{}, err
	}
	return CLI{Name: cli, Set: set, Version: v, Bin: filepath.Join(root, pinnedDir, set, "node_modules", ".bin", cli)}, nil
}

// PinnedAll lists the pinned versions of every CLI (claude, codex, gemini), each once (see Pinned).
func PinnedAll(t testing.TB) []CLI {
	t.Helper()
	var all []CLI
	for _, cli := range []string{"claude", "codex", "gemini"} {
		all = append(all, Pinned(t, cli)...)
	}
	return all
}

// EachPinned runs fn as a parallel subtest for each pinned version of every CLI (named by its label), inside
// its loopback-only namespace (Enter) once the CLI is known to be installed (Require).
func EachPinned(t *testing.T, fn func(t *testing.T, c CLI)) {
	for _, c := range PinnedAll(t) {
		t.Run(c.Label(), func(t *testing.T) {
			t.Parallel()
			Require(t, c)
			if Enter(t) {
				fn(t, c)
			}
		})
	}
}

// Require skips the test with the reason when node or the pinned CLI is not installed; under CI=true it fails
// instead, so CI never passes by skipping. The pinned install is the one the test uses, never one on PATH: a CLI
// installed by hand on a developer's machine is not what CI has. Then it waits for one of the machine's real-CLI
// slots and holds it for the rest of the test (Slot): call it after t.Parallel.
func Require(t testing.TB, c CLI) {
	t.Helper()
	Installed(t, c)
	Slot(t)
}

// Installed skips the test with the reason when node or the pinned CLI is not installed (fails it under
// CI=true): Require without the slot, for a case that holds one already (Cases).
func Installed(t testing.TB, c CLI) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		missing(t, "node is not installed: the real-CLI tests need it (.ci/run installs it; or apt-get install nodejs npm)")
	}
	if v, major := nodeMajor(); major < minNode[c.Name] {
		missing(t, fmt.Sprintf("%s needs Node >= %d, node is %s", c.Name, minNode[c.Name], v))
	}
	if _, err := os.Stat(c.Bin); err != nil {
		missing(t, fmt.Sprintf("%s %s is not installed: run `npm ci --prefix %s/%s` (what .ci/run does)", c.Name, c.Version, pinnedDir, c.Set))
	}
}

// missing skips the test with reason, or fails it under CI=true.
func missing(t testing.TB, reason string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("realcli: %s (CI=true: failing instead of skipping)", reason)
	}
	t.Skipf("realcli: %s", reason)
}

// PinnedVersion is the version of cli that tools/agent-clis/<set>/package.json pins: the one place versions live.
func PinnedVersion(cli, set string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(filepath.Join(root, pinnedDir, set, "package.json"))
	if err != nil {
		return "", fmt.Errorf("read pinned CLI versions: %w", err)
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		return "", fmt.Errorf("parse %s/%s/package.json: %w", pinnedDir, set, err)
	}
	v, ok := pkg.Dependencies[npmPackage[cli]]
	if !ok {
		return "", fmt.Errorf("%s/%s/package.json pins no %s", pinnedDir, set, npmPackage[cli])
	}
	return v, nil
}

// moduleRoot walks up from the working directory (a test runs in its package's directory) to go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("realcli: no go.mod above the working directory")
		}
		dir = parent
	}
}
