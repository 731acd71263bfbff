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

// pinnedDir holds package.json with the CLI versions the tests run, relative to the module root.
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

// Require returns the path of cli's binary, or skips the test with the reason when node or the CLI is missing;
// under CI=true it fails instead, so CI never passes by skipping.
func Require(t testing.TB, cli string) string {
	t.Helper()
	if _, ok := npmPackage[cli]; !ok {
		t.Fatalf("realcli: unknown CLI %q (want claude, codex or gemini)", cli)
	}
	if _, err := exec.LookPath("node"); err != nil {
		missing(t, "node is not installed: the real-CLI tests need it (.ci/run installs it; or apt-get install nodejs npm)")
	}
	if v, major := nodeMajor(); major < minNode[cli] {
		missing(t, fmt.Sprintf("%s needs Node >= %d, node is %s", cli, minNode[cli], v))
	}
	bin, err := Binary(cli)
	if err != nil {
		missing(t, err.Error())
	}
	return bin
}

// missing skips the test with reason, or fails it under CI=true.
func missing(t testing.TB, reason string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("realcli: %s (CI=true: failing instead of skipping)", reason)
	}
	t.Skipf("realcli: %s", reason)
}

// Binary finds cli in the module's tools/agent-clis/node_modules/.bin (the pinned install `npm ci --prefix
// tools/agent-clis` makes), then on PATH.
func Binary(cli string) (string, error) {
	if root, err := moduleRoot(); err == nil {
		p := filepath.Join(root, pinnedDir, "node_modules", ".bin", cli)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath(cli)
	if err != nil {
		return "", fmt.Errorf("%s is not installed: run `npm ci --prefix %s` (the pinned version) or put it on PATH", cli, pinnedDir)
	}
	return p, nil
}

// PinnedVersion is the version of cli that tools/agent-clis/package.json pins: the one place versions live.
func PinnedVersion(cli string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(filepath.Join(root, pinnedDir, "package.json"))
	if err != nil {
		return "", fmt.Errorf("read pinned CLI versions: %w", err)
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		return "", fmt.Errorf("parse %s/package.json: %w", pinnedDir, err)
	}
	v, ok := pkg.Dependencies[npmPackage[cli]]
	if !ok {
		return "", fmt.Errorf("%s/package.json pins no %s", pinnedDir, npmPackage[cli])
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
