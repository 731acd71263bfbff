package workspace

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/gittest"
)

// procArgv is what every process on the machine shows in /proc/<pid>/cmdline, NULs made spaces.
func procArgv() []string {
	var all []string
	pids, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range pids {
		if b, err := os.ReadFile(p); err == nil && len(b) > 0 {
			all = append(all, string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
		}
	}
	return all
}

// noTokenUnder fails t for every file under root whose name or content holds the token.
func noTokenUnder(t *testing.T, root string) {
	t.Helper()
	_ = filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		if strings.Contains(p, token) {
			t.Errorf("token in the path %s", p)
		}
		if !fi.IsDir() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(token)) {
				t.Errorf("token written to %s", p)
			}
		}
		return nil
	})
}

// TestMirrorTokenNeverInArgvNorOnDisk looks at every process's argv while git talks to the server, when the
// mirror is created and when it is fetched, and at every file under the root afterwards.
func TestMirrorTokenNeverInArgvNorOnDisk(t *testing.T) {
	if _, err := os.Stat("/proc/self/cmdline"); err != nil {
		t.Skip("no /proc")
	}
	t.Parallel()
	ctx := context.Background()
	m, spec, _, srv := setupServer(t)
	var mu sync.Mutex
	var leaks []string
	sawGit := 0
	srv.OnRequest(func(r *http.Request) {
		for _, argv := range procArgv() {
			mu.Lock()
			if strings.Contains(argv, token) {
				leaks = append(leaks, strings.ReplaceAll(argv, token, "<TOKEN>"))
			}
			if strings.Contains(argv, "git") && strings.Contains(argv, srv.URL("acme/widgets.git")) {
				sawGit++ // git remote-http <remote> <url>: the child that sends the credentials
			}
			mu.Unlock()
		}
	})
	if _, err := m.Prepare(ctx, spec); err != nil { // creates the mirror
		t.Fatal(err)
	}
	spec.Issue, spec.Branch = 8, "ace/8-more"
	if _, err := m.Prepare(ctx, spec); err != nil { // fetches into it
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if sawGit < 2 {
		t.Fatalf("saw the git child in %d requests: the argv scan does not see it", sawGit)
	}
	for _, l := range leaks {
		t.Errorf("token in argv: %s", l)
	}
	if srv.Denied() == 0 {
		t.Error("the server never asked for credentials: the test does not exercise them")
	}
	noTokenUnder(t, m.o.Root)
}

// TestMirrorCredentialHelpersOfTheUserNeverSeeTheToken: a user whose git configuration stores credentials
// (credential.helper=store) must not find ace's token in their store.
func TestMirrorCredentialHelpersOfTheUserNeverSeeTheToken(t *testing.T) {
	home := t.TempDir()
	store := filepath.Join(home, "stored-credentials")
	global := filepath.Join(home, ".gitconfig")
	if err := os.WriteFile(global, []byte("[credential]\n\thelper = store --file "+store+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("GIT_CONFIG_GLOBAL", global)
	m, spec, _ := setup(t)
	if _, err := m.Prepare(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(store); err == nil {
		t.Fatalf("the user's credential store holds: %q", strings.ReplaceAll(string(b), token, "<TOKEN>"))
	}
}

func TestMirrorWrongTokenFailsCleanly(t *testing.T) {
	t.Parallel()
	m, spec, _ := setup(t)
	const wrong = "ghs_wrongToken456"
	m.o.Auth = trackerAuth(t, "http://127.0.0.1/", wrong)
	_, err := m.Prepare(context.Background(), spec)
	if err == nil {
		t.Fatal("a wrong token made a mirror")
	}
	if strings.Contains(err.Error(), wrong) {
		t.Errorf("error shows the token: %v", err)
	}
	mirror, _ := m.mirrorPath(spec.Repo)
	if left, _ := filepath.Glob(mirror + "*"); len(left) != 1 || !strings.HasSuffix(left[0], ".lock") {
		t.Errorf("left behind: %v", left)
	}
	m.o.Auth = trackerAuth(t, "http://127.0.0.1/", "bad\ntoken")
	if _, err := m.Prepare(context.Background(), spec); err == nil || !strings.Contains(err.Error(), "control character") {
		t.Errorf("a token with a newline: %v", err)
	}
}

// A mirror that a crash or a person left unusable is moved aside, kept, and replaced by a fresh one.
func TestBrokenMirrorIsMovedAside(t *testing.T) {
	t.Parallel()
	m, spec, _ := setup(t)
	mirror, _ := m.mirrorPath(spec.Repo)
	if err := os.MkdirAll(mirror, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(mirror, "junk"), []byte("x"), 0o644)
	if _, err := m.Prepare(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	aside, _ := filepath.Glob(mirror + ".broken-*")
	if len(aside) != 1 {
		t.Fatalf("broken mirror not moved aside: %v", aside)
	}
	if _, err := os.Stat(filepath.Join(aside[0], "junk")); err != nil {
		t.Error("the broken mirror's files were lost")
	}
	if !isBareRepo(mirror) {
		t.Error("no new mirror in place")
	}
}

// The mirror follows the remote: a new commit on base reaches the next working copy, a deleted branch goes.
func TestMirrorFetchFollowsTheRemote(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m, spec, bare := setup(t)
	if _, err := m.Prepare(ctx, spec); err != nil {
		t.Fatal(err)
	}
	gittest.Run(t, bare, "branch", "gone", "main")
	seed := t.TempDir()
	gittest.Run(t, seed, "clone", "-q", bare, "w")
	os.WriteFile(filepath.Join(seed, "w", "new.txt"), []byte("new\n"), 0o644)
	gittest.Run(t, filepath.Join(seed, "w"), "add", "new.txt")
	gittest.Run(t, filepath.Join(seed, "w"), "commit", "-q", "-m", "second")
	gittest.Run(t, filepath.Join(seed, "w"), "push", "-q", "origin", "main")
	spec.Issue, spec.Branch = 8, "ace/8-next"
	ws, err := m.Prepare(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ws.Dir, "new.txt")); err != nil {
		t.Error("the second working copy lacks the new commit on main")
	}
	if ws.BaseCommit != gittest.Run(t, bare, "rev-parse", "main") {
		t.Errorf("base commit %s is not the remote's main", ws.BaseCommit)
	}
	gittest.Run(t, bare, "branch", "-D", "gone")
	spec.Issue, spec.Branch = 9, "ace/9-x"
	if _, err := m.Prepare(ctx, spec); err != nil {
		t.Fatal(err)
	}
	mirror, _ := m.mirrorPath(spec.Repo)
	if out := gittest.Run(t, mirror, "for-each-ref", "refs/heads/gone"); out != "" {
		t.Errorf("a branch deleted on the remote stays in the mirror: %s", out)
	}
	if got := gittest.Run(t, mirror, "config", "gc.auto"); got != "0" {
		t.Errorf("mirror gc.auto = %q, want 0 (working copies borrow its objects)", got)
	}
}

// A branch an earlier attempt pushed is where a new working copy of the issue continues; a partial copy left
// by a killed process is replaced, never taken for a working copy.
func TestNewCopyContinuesPushedBranchAndReplacesPartial(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m, spec, bare := setup(t)
	ws, err := m.Prepare(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws.Dir, "work.txt"), []byte("attempt 1\n"), 0o644)
	if _, _, err := ws.CommitAll(ctx, "attempt 1"); err != nil {
		t.Fatal(err)
	}
	if err := ws.Push(ctx); err != nil {
		t.Fatal(err)
	}
	pushed := gittest.Run(t, bare, "rev-parse", spec.Branch)
	if err := m.Remove(ctx, spec.Repo, spec.Issue); err != nil {
		t.Fatal(err)
	}
	partial := ws.Dir + ".partial"
	os.MkdirAll(filepath.Join(partial, ".git"), 0o755)
	os.WriteFile(filepath.Join(partial, "half"), []byte("x"), 0o644)
	again, err := m.Prepare(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if head, _ := again.Head(ctx); head != pushed {
		t.Errorf("new copy at %s, want the pushed %s", head, pushed)
	}
	if again.Branch != spec.Branch || again.BaseCommit != gittest.Run(t, bare, "rev-parse", "main") {
		t.Errorf("branch %s base %s", again.Branch, again.BaseCommit)
	}
	if n, _ := again.CommitsAhead(ctx); n != 1 {
		t.Errorf("ahead = %d, want 1", n)
	}
	if changed, _ := again.HasChanges(ctx); changed {
		t.Error("a fresh copy has changes")
	}
	if _, err := os.Stat(partial); !os.IsNotExist(err) {
		t.Errorf("partial copy still there: %v", err)
	}
}

// TestMirrorFetchIsSharedByRunsThatWaited: runs of one repository prepared at once fetch the mirror once or
// twice, not once each: a fetch that began after a run asked serves that run too.
func TestMirrorFetchIsSharedByRunsThatWaited(t *testing.T) {
	t.Parallel()
	mirror := filepath.Join(t.TempDir(), "r.git")
	asked := time.Now()
	if fetchedSince(mirror, asked) {
		t.Fatal("a mirror never fetched counts as fetched")
	}
	markFetched(mirror, asked.Add(-time.Second))
	if fetchedSince(mirror, asked) {
		t.Fatal("a fetch that began before the run asked was taken as new enough")
	}
	markFetched(mirror, asked.Add(time.Millisecond))
	if !fetchedSince(mirror, asked) {
		t.Fatal("a fetch that began after the run asked was not taken as new enough")
	}
}
