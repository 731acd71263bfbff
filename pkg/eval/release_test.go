package eval

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

const (
	relPkg = clireleasetest.Package
	relCLI = clireleasetest.CLI
)

// TestReleasesFindTheGivenDirectoriesFirst: a release in a directory given is taken as it is, npm never asked;
// one held by none of them (another release there) is installed under ace's root, or with NoInstall refused,
// naming how to get it.
func TestReleasesFindTheGivenDirectoriesFirst(t *testing.T) {
	root := t.TempDir()
	oldest := clireleasetest.Prefix(t, filepath.Join(t.TempDir(), "oldest"), "2.1.197")
	newest := clireleasetest.Prefix(t, filepath.Join(t.TempDir(), "newest"), "2.1.332")
	log := filepath.Join(t.TempDir(), "npm.log")
	t.Setenv("PATH", clireleasetest.NPM(t, clireleasetest.Install))
	t.Setenv("NPM_LOG", log)
	rs := Releases{Root: root, Dirs: []string{oldest, newest}}
	ctx := context.Background()
	for v, dir := range map[string]string{"2.1.197": oldest, "2.1.332": newest} {
		if r, err := rs.Find(ctx, "claude", v, relPkg, relCLI); err != nil || r.Dir != dir {
			t.Errorf("claude@%s: %+v, %v, want %s's", v, r, err, dir)
		}
	}
	if _, err := os.Stat(log); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("npm was asked for a release a directory holds: %v", err)
	}

	noInstall := rs
	noInstall.NoInstall = true
	_, err := noInstall.Find(ctx, "claude", "2.1.331", relPkg, relCLI)
	for _, want := range []string{oldest + " holds 2.1.197", newest + " holds 2.1.332", "ace agents install claude@2.1.331"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a release held nowhere, with no install: %v, want %q in it", err, want)
		}
	}
	r, err := rs.Find(ctx, "claude", "2.1.331", relPkg, relCLI)
	if err != nil || r.Dir != clirelease.Dir(root, "claude", "2.1.331") {
		t.Fatalf("installed on demand: %+v, %v", r, err)
	}
	if r, err := noInstall.Find(ctx, "claude", "2.1.331", relPkg, relCLI); err != nil || r.Dir != clirelease.Dir(root, "claude", "2.1.331") {
		t.Errorf("the release ace keeps, found again: %+v, %v", r, err)
	}
	if _, err := rs.Find(ctx, "claude", "latest", relPkg, relCLI); err == nil {
		t.Error("a tag was taken for a release")
	}
}
