package clirelease_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aceworks/ace/internal/clireleasetest"
	"github.com/aceworks/ace/pkg/clirelease"
)

const pkg = clireleasetest.Package

var prefix = clireleasetest.Prefix

func TestFindTakesTheDirectoryHoldingTheVersion(t *testing.T) {
	t.Parallel()
	oldest := prefix(t, filepath.Join(t.TempDir(), "oldest"), "2.1.197")
	newest := prefix(t, filepath.Join(t.TempDir(), "newest"), "2.1.332")
	r, err := clirelease.Find([]string{oldest, newest, t.TempDir()}, pkg, "claude", "2.1.332")
	if err != nil {
		t.Fatal(err)
	}
	if r.Dir != newest || r.Program != filepath.Join(newest, "node_modules", ".bin", "claude") || r.Version != "2.1.332" {
		t.Errorf("found %+v, want the newest set's", r)
	}
}

func TestFindRefusesAnotherVersion(t *testing.T) {
	t.Parallel()
	oldest := prefix(t, t.TempDir(), "2.1.197")
	_, err := clirelease.Find([]string{oldest}, pkg, "claude", "2.1.332")
	if !errors.Is(err, clirelease.ErrNotFound) || !strings.Contains(err.Error(), oldest+" holds 2.1.197") {
		t.Errorf("a directory holding another release: %v", err)
	}
}

func TestInstallPutsTheReleaseInPlaceWhole(t *testing.T) {
	root := t.TempDir()
	log := filepath.Join(t.TempDir(), "npm.log")
	t.Setenv("PATH", clireleasetest.NPM(t, clireleasetest.Install))
	t.Setenv("NPM_LOG", log)
	dir := clirelease.Dir(root, "claude", "2.1.331")
	r, err := clirelease.Installer{}.Install(context.Background(), dir, pkg, "claude", "2.1.331")
	if err != nil {
		t.Fatal(err)
	}
	if r.Dir != dir || r.Program != filepath.Join(dir, "node_modules", ".bin", "claude") {
		t.Errorf("installed %+v", r)
	}
	if ents, _ := os.ReadDir(filepath.Join(root, "clis")); len(ents) != 1 {
		t.Errorf("%d entries in clis/, want the release alone (no temporary directory left)", len(ents))
	}
	// Installed once: a second install finds it there.
	if _, err := (clirelease.Installer{}).Install(context.Background(), dir, pkg, "claude", "2.1.331"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(log); string(b) != pkg+"@2.1.331\n" {
		t.Errorf("npm installed %q, want the release once", b)
	}

	t.Setenv("NPM_LIE", "1")
	other := clirelease.Dir(root, "claude", "2.1.332")
	if _, err := (clirelease.Installer{}).Install(context.Background(), other, pkg, "claude", "2.1.332"); err == nil ||
		!strings.Contains(err.Error(), "installed something else") {
		t.Errorf("npm installing another release: %v", err)
	}
	if _, err := os.Stat(other); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused install left %s: %v", other, err)
	}
}

func TestInstallSaysWhatFailed(t *testing.T) {
	dir := clirelease.Dir(t.TempDir(), "claude", "2.1.331")
	t.Setenv("PATH", t.TempDir())
	if _, err := (clirelease.Installer{}).Install(context.Background(), dir, pkg, "claude", "2.1.331"); err == nil ||
		!strings.Contains(err.Error(), "npm is needed and was not found") {
		t.Errorf("no npm: %v", err)
	}
	t.Setenv("PATH", clireleasetest.NPM(t, "echo 'npm error 404 Not Found' >&2; exit 1\n"))
	_, err := clirelease.Installer{}.Install(context.Background(), dir, pkg, "claude", "2.1.331")
	if err == nil || !strings.Contains(err.Error(), "npm install --prefix") || !strings.Contains(err.Error(), "--no-audit --no-fund") ||
		!strings.Contains(err.Error(), "404 Not Found") {
		t.Errorf("a failed install: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed install left %s", dir)
	}
	for _, v := range []string{"latest", "^2.1.0", "2.1.x", ""} {
		if _, err := (clirelease.Installer{}).Install(context.Background(), dir, pkg, "claude", v); err == nil || !strings.Contains(err.Error(), "not a release number") {
			t.Errorf("version %q: %v", v, err)
		}
	}
}
