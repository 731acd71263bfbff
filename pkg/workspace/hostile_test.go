package workspace

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/gittest"
	"github.com/aceworks/ace/pkg/sandbox"
	"github.com/aceworks/ace/pkg/sandbox/sandboxtest"
)

// The working copy is the agent's, .git included: these tests plant in it what a hostile agent would and check
// that ace's own git commands there run none of it and follow none of it (workgit.go, push.go, record.go).

// hostileCopy is a prepared working copy, with a directory of markers outside it that only a program run on the
// host can write.
type hostileCopy struct {
	m       *Manager
	ws      *Workspace
	spec    Spec
	bare    string
	srv     *gittest.HTTPServer
	markers string
}

func newHostileCopy(t *testing.T, boxes *sandbox.Detector) *hostileCopy {
	t.Helper()
	gitRoot := t.TempDir()
	bare := gittest.BareRepo(t, filepath.Join(gitRoot, "acme"), "widgets", map[string]string{"README.md": "hi\n", "notes.txt": "one\n"})
	srv := gittest.NewHTTPServer(t, gitRoot, token)
	m, err := New(Options{Root: t.TempDir(), Auth: trackerAuth(t, "http://127.0.0.1/", token), Boxes: boxes, GitTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	spec := Spec{Repo: "acme/widgets", Issue: 7, RemoteURL: srv.URL("acme/widgets.git"), BaseBranch: "main", Branch: "ace/7-fix"}
	ws, err := m.Prepare(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	return &hostileCopy{m: m, ws: ws, spec: spec, bare: bare, srv: srv, markers: t.TempDir()}
}

// program writes an executable script at path (relative to the working copy) that leaves the marker name when
// it runs, passing its input on (a filter that works), and returns its absolute path.
func (h *hostileCopy) program(t *testing.T, path, name string) string {
	t.Helper()
	p := filepath.Join(h.ws.Dir, path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("#!/bin/sh\necho ran > %s\ncat\n", filepath.Join(h.markers, name))
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// agentGit runs git in the working copy as the agent would, in its own configuration.
func (h *hostileCopy) agentGit(t *testing.T, args ...string) string {
	t.Helper()
	return gittest.Run(t, h.ws.Dir, args...)
}

func (h *hostileCopy) write(t *testing.T, name, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(h.ws.Dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// ran are the markers programs of the working copy left on the host.
func (h *hostileCopy) ran(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir(h.markers)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// everything runs each of ace's commands on a working copy: the leftover commit, the reads, the handover, the push.
func (h *hostileCopy) everything(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if _, err := h.ws.Tracked(ctx, "notes.txt"); err != nil {
		t.Errorf("tracked: %v", err)
	}
	if _, committed, err := h.ws.CommitAll(ctx, "leftovers"); err != nil || !committed {
		t.Errorf("commit: %v %v", committed, err)
	}
	if n, err := h.ws.CommitsAhead(ctx); err != nil || n < 1 {
		t.Errorf("ahead %d %v", n, err)
	}
	h.write(t, "notes.txt", "three\n")
	if _, err := h.ws.SoFar(ctx); err != nil {
		t.Errorf("so far: %v", err)
	}
	if err := h.ws.Exclude(ctx, "/.env"); err != nil {
		t.Errorf("exclude: %v", err)
	}
	if err := h.ws.Push(ctx); err != nil {
		t.Errorf("push: %v", err)
	}
}

// boxedAndNot are the two ways ace runs git on a working copy: boxed, and on a machine where boxes do not work.
var boxedAndNot = []struct {
	name  string
	boxes func(t *testing.T) *sandbox.Detector
}{
	{"boxed", func(t *testing.T) *sandbox.Detector { sandboxtest.Host(t); return sandbox.NewDetector() }},
	{"unboxed", func(*testing.T) *sandbox.Detector { return sandbox.Refusing(errors.New("no boxes in this test")) }},
}

// hooks are every hook git 2.39 knows (githooks(5)).
var hooks = []string{"applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit",
	"prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase", "post-checkout", "post-merge", "pre-push",
	"pre-receive", "update", "proc-receive", "post-receive", "post-update", "reference-transaction", "push-to-checkout",
	"pre-auto-gc", "post-rewrite", "sendemail-validate", "fsmonitor-watchman", "p4-changelist", "p4-prepare-changelist",
	"p4-post-changelist", "p4-pre-submit", "post-index-change"}

// TestWorkingCopyProgramsNeverRunOnTheHost: hooks (in .git/hooks and in a core.hooksPath), an fsmonitor, clean and
// smudge filters, a textconv and an external diff planted in the working copy leave no mark on the host while ace
// commits, reads, hands over and pushes — boxed, and where boxes do not work the hooks, fsmonitor and diff
// programs still do not run (a filter would: an unboxed agent runs as the user anyway).
func TestWorkingCopyProgramsNeverRunOnTheHost(t *testing.T) {
	t.Parallel()
	for _, tc := range boxedAndNot {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHostileCopy(t, tc.boxes(t))
			for _, hook := range hooks {
				h.program(t, ".git/hooks/"+hook, "hook-"+hook)
				h.program(t, "myhooks/"+hook, "hookspath-"+hook)
			}
			h.agentGit(t, "config", "core.hooksPath", filepath.Join(h.ws.Dir, "myhooks"))
			h.agentGit(t, "config", "core.fsmonitor", h.program(t, "fsmonitor.sh", "fsmonitor"))
			h.agentGit(t, "config", "diff.external", h.program(t, "extdiff.sh", "diff-external"))
			h.agentGit(t, "config", "diff.t.textconv", h.program(t, "textconv.sh", "textconv"))
			h.agentGit(t, "config", "diff.t.command", h.program(t, "diffcmd.sh", "diff-command"))
			h.agentGit(t, "config", "commit.gpgSign", "true")
			h.agentGit(t, "config", "gpg.program", h.program(t, "gpg.sh", "gpg-program"))
			h.agentGit(t, "config", "core.pager", h.program(t, "pager.sh", "pager"))
			h.agentGit(t, "config", "core.editor", h.program(t, "editor.sh", "editor"))
			h.agentGit(t, "config", "filter.x.clean", h.program(t, "clean.sh", "filter-clean"))
			h.agentGit(t, "config", "filter.x.smudge", h.program(t, "smudge.sh", "filter-smudge"))
			h.write(t, ".gitattributes", "notes.txt diff=t\n*.dat filter=x\n")
			h.write(t, "notes.txt", "two\n")
			h.write(t, "new.dat", "data\n")
			h.everything(t)
			ran := h.ran(t)
			if tc.name == "unboxed" {
				ran = slicesWithout(ran, "filter-clean", "filter-smudge")
			}
			if len(ran) != 0 {
				t.Errorf("ran on the host: %q", ran)
			}
			if got := gittest.Run(t, h.bare, "show", h.spec.Branch+":new.dat"); got != "data" {
				t.Errorf("pushed new.dat = %q", got)
			}
		})
	}
}

func slicesWithout(s []string, drop ...string) []string {
	var out []string
	for _, x := range s {
		keep := true
		for _, d := range drop {
			keep = keep && x != d
		}
		if keep {
			out = append(out, x)
		}
	}
	return out
}

// TestLazyFetchOfAPartialCloneGoesNowhere: a working copy made a "partial clone" whose promisor remote is an ext::
// command, and an object its branch needs removed: reading the branch (the pack of a push) would fetch the object
// from that remote, running the command. ace's git has no transport at all, boxed or not, so the push fails
// saying what is missing, and nothing ran.
func TestLazyFetchOfAPartialCloneGoesNowhere(t *testing.T) {
	t.Parallel()
	for _, tc := range boxedAndNot {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lazyFetch(t, newHostileCopy(t, tc.boxes(t)))
		})
	}
}

func lazyFetch(t *testing.T, h *hostileCopy) {
	h.write(t, "lost.txt", "to be lost\n")
	h.agentGit(t, "add", "lost.txt")
	h.agentGit(t, "commit", "-q", "-m", "a file whose blob goes")
	blob := h.agentGit(t, "rev-parse", "HEAD:lost.txt")
	if err := os.Remove(filepath.Join(h.ws.Dir, ".git", "objects", blob[:2], blob[2:])); err != nil {
		t.Fatal(err)
	}
	h.agentGit(t, "config", "extensions.partialClone", "origin")
	h.agentGit(t, "config", "core.repositoryformatversion", "1")
	h.agentGit(t, "config", "remote.origin.promisor", "true")
	h.agentGit(t, "config", "protocol.ext.allow", "always")
	h.agentGit(t, "config", "remote.origin.url", "ext::sh -c touch% "+filepath.Join(h.markers, "ext-remote"))
	err := h.ws.Push(context.Background())
	if err == nil {
		t.Error("the push of a branch with a missing object succeeded")
	}
	if ran := h.ran(t); len(ran) != 0 {
		t.Errorf("ran on the host: %q", ran)
	}
}

// TestPushGoesWhereTheRecordSays: the working copy's origin URL, pushurl, url rewrites and proxies all name an
// attacker's server; the push goes to the remote of ace's record, and the token only to the token's host.
func TestPushGoesWhereTheRecordSays(t *testing.T) {
	t.Parallel()
	h := newHostileCopy(t, nil)
	var mu sync.Mutex
	var attacked []string
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		attacked = append(attacked, r.Method+" "+r.URL.String()+" auth="+r.Header.Get("Authorization"))
		mu.Unlock()
		http.Error(w, "nope", http.StatusNotFound)
	}))
	defer attacker.Close()
	var auths []string
	h.srv.OnRequest(func(r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
	})
	real := h.spec.RemoteURL
	h.agentGit(t, "config", "remote.origin.url", attacker.URL+"/url.git")
	h.agentGit(t, "config", "remote.origin.pushurl", attacker.URL+"/pushurl.git")
	h.agentGit(t, "config", "remote.origin.proxy", attacker.URL)
	h.agentGit(t, "config", "http.proxy", attacker.URL)
	h.agentGit(t, "config", "url."+attacker.URL+"/insteadof/.insteadOf", real)
	h.agentGit(t, "config", "url."+attacker.URL+"/pushinsteadof/.pushInsteadOf", real)
	h.write(t, "fix.txt", "fixed\n")
	ctx := context.Background()
	if _, _, err := h.ws.CommitAll(ctx, "fix"); err != nil {
		t.Fatal(err)
	}
	if err := h.ws.Push(ctx); err != nil {
		t.Fatal(err)
	}
	if got := gittest.Run(t, h.bare, "log", "--format=%s", "-1", h.spec.Branch); got != "fix" {
		t.Errorf("the remote's branch is at %q", got)
	}
	seen := func() (attacks, tokens []string) {
		mu.Lock()
		defer mu.Unlock()
		attacks, tokens = append(attacks, attacked...), append(tokens, auths...)
		auths = nil
		return attacks, tokens
	}
	attacks, tokens := seen()
	if len(attacks) != 0 {
		t.Errorf("the attacker's server was reached: %q", attacks)
	}
	if len(tokens) == 0 || tokens[0] == "" {
		t.Errorf("the remote got no token: %q", tokens)
	}
	// A manager whose tracker's git host is another (github.com) never sends the token to this remote: the push
	// is refused there.
	other, err := New(Options{Root: h.m.o.Root, Auth: trackerAuth(t, "", token)})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := other.Open(ctx, h.spec.Repo, h.spec.Issue)
	if err != nil {
		t.Fatal(err)
	}
	h.write(t, "more.txt", "more\n")
	if _, _, err := ws.CommitAll(ctx, "more"); err != nil {
		t.Fatal(err)
	}
	if err := ws.Push(ctx); err == nil || !strings.Contains(err.Error(), "authentication failed") {
		t.Errorf("push without the token: %v", err)
	}
	_, tokens = seen()
	for _, a := range tokens {
		if a != "" {
			t.Errorf("the token went to a remote off the token's host: %q", a)
		}
	}
}

// TestRecordNotTheCopy: what the working copy says of itself — its base, base commit and branch in its config,
// its HEAD on another branch — changes nothing of what ace does: it opens the copy as its record says, refuses to
// commit on another branch, and pushes only the run's branch.
func TestRecordNotTheCopy(t *testing.T) {
	t.Parallel()
	h := newHostileCopy(t, nil)
	ctx := context.Background()
	h.agentGit(t, "config", "ace.basecommit", "--output=/tmp/pwned")
	h.agentGit(t, "config", "ace.base", "release")
	h.agentGit(t, "checkout", "-q", "-b", "main-too")
	h.write(t, "x.txt", "x\n")
	ws, err := h.m.Open(ctx, h.spec.Repo, h.spec.Issue)
	if err != nil {
		t.Fatal(err)
	}
	if ws.Branch != h.spec.Branch || ws.BaseBranch != "main" || ws.BaseCommit != h.ws.BaseCommit || ws.RemoteURL != h.spec.RemoteURL {
		t.Errorf("opened as %+v, want the record's", ws)
	}
	if _, _, err := ws.CommitAll(ctx, "leftovers"); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "main-too") {
		t.Errorf("commit on another branch: %v, want a refusal naming it", err)
	}
	h.agentGit(t, "add", "x.txt")
	h.agentGit(t, "commit", "-q", "-m", "on main-too")
	if err := ws.Push(ctx); err != nil {
		t.Fatal(err)
	}
	if heads := gittest.Run(t, h.bare, "for-each-ref", "--format=%(refname)", "refs/heads/"); heads != "refs/heads/ace/7-fix\nrefs/heads/main" {
		t.Errorf("the remote's branches: %q, want main and the run's", heads)
	}
}

// TestRefusedWorkingCopies: a .git that is a symlink or a gitfile, and a FIFO where git reads a file, are refused
// (ErrRefused, saying what was found) — the FIFO within the git timeout, never a hang.
func TestRefusedWorkingCopies(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, want string
		plant      func(t *testing.T, h *hostileCopy)
	}{
		{"symlink", "symbolic link", func(t *testing.T, h *hostileCopy) {
			dot := filepath.Join(h.ws.Dir, ".git")
			if err := os.Rename(dot, dot+"-real"); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(dot+"-real", dot); err != nil {
				t.Fatal(err)
			}
		}},
		{"gitfile", "a file, not the directory", func(t *testing.T, h *hostileCopy) {
			dot := filepath.Join(h.ws.Dir, ".git")
			if err := os.Rename(dot, dot+"-real"); err != nil {
				t.Fatal(err)
			}
			h.write(t, ".git", "gitdir: .git-real\n")
		}},
		{"fifo", "did not end within", func(t *testing.T, h *hostileCopy) {
			if err := syscall.Mkfifo(filepath.Join(h.ws.Dir, ".gitignore"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHostileCopy(t, nil)
			h.m.o.GitTimeout = time.Second
			tc.plant(t, h)
			_, err := h.ws.HasChanges(context.Background())
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v, want a refusal saying %q", err, tc.want)
			}
		})
	}
}

// TestPushNeverForces: a branch that moved on the remote to a commit the working copy lacks is not overwritten.
func TestPushNeverForces(t *testing.T) {
	t.Parallel()
	h := newHostileCopy(t, nil)
	ctx := context.Background()
	seed := t.TempDir()
	gittest.Run(t, seed, "clone", "-q", h.bare, ".")
	gittest.Run(t, seed, "checkout", "-q", "-b", h.spec.Branch)
	gittest.Run(t, seed, "commit", "-q", "--allow-empty", "-m", "someone else's")
	gittest.Run(t, seed, "push", "-q", "origin", h.spec.Branch)
	theirs := gittest.Run(t, h.bare, "rev-parse", h.spec.Branch)
	h.write(t, "mine.txt", "mine\n")
	if _, _, err := h.ws.CommitAll(ctx, "mine"); err != nil {
		t.Fatal(err)
	}
	if err := h.ws.Push(ctx); err == nil || !strings.Contains(err.Error(), "never forces") {
		t.Errorf("push over a moved branch: %v", err)
	}
	if got := gittest.Run(t, h.bare, "rev-parse", h.spec.Branch); got != theirs {
		t.Errorf("the remote's branch moved to %s", got)
	}
}

// TestAdoptsCopyOfAnOlderAce: a working copy made before ace kept records is opened from what it says of itself,
// checked — its remote from the mirror — and a value that is not what it claims refuses it.
func TestAdoptsCopyOfAnOlderAce(t *testing.T) {
	t.Parallel()
	h := newHostileCopy(t, nil)
	ctx := context.Background()
	rec, err := h.m.recordPath(h.ws.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(rec); err != nil {
		t.Fatal(err)
	}
	h.agentGit(t, "config", "remote.origin.url", "https://attacker.invalid/x.git")
	ws, err := h.m.Open(ctx, h.spec.Repo, h.spec.Issue)
	if err != nil {
		t.Fatal(err)
	}
	if ws.RemoteURL != h.spec.RemoteURL || ws.Branch != h.spec.Branch || ws.BaseCommit != h.ws.BaseCommit {
		t.Errorf("adopted as %+v", ws)
	}
	if rec, err := h.m.readRecord(h.ws.Dir); err != nil || rec.RemoteURL != h.spec.RemoteURL {
		t.Errorf("record %+v %v", rec, err)
	}
	if err := os.Remove(rec); err != nil {
		t.Fatal(err)
	}
	h.agentGit(t, "config", "ace.basecommit", "--output=/tmp/pwned")
	if _, err := h.m.Open(ctx, h.spec.Repo, h.spec.Issue); err == nil || !strings.Contains(err.Error(), "not a commit id") {
		t.Errorf("open with a bad base commit: %v", err)
	}
}

// TestPushThatFailsHalfWayEnds: a branch whose objects are missing cannot be packed; the push to a repository on
// this machine (a local tracker's) is refused at once, its receive-pack ended, never left waiting for the pack.
func TestPushThatFailsHalfWayEnds(t *testing.T) {
	t.Parallel()
	h := newHostileCopy(t, nil)
	ctx := context.Background()
	ws, err := h.m.Prepare(ctx, Spec{Repo: "acme/widgets", Issue: 8, RemoteURL: h.bare, BaseBranch: "main", Branch: "ace/8-fix"})
	if err != nil {
		t.Fatal(err)
	}
	h.ws = ws
	h.write(t, "lost.txt", "lost\n")
	h.agentGit(t, "add", "lost.txt")
	h.agentGit(t, "commit", "-q", "-m", "a blob that goes")
	blob := h.agentGit(t, "rev-parse", "HEAD:lost.txt")
	h.agentGit(t, "rm", "-q", "lost.txt")
	h.agentGit(t, "commit", "-q", "-m", "only history keeps it")
	if err := os.Remove(filepath.Join(ws.Dir, ".git", "objects", blob[:2], blob[2:])); err != nil {
		t.Fatal(err)
	}
	if err := ws.Push(ctx); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "cannot be packed") {
		t.Errorf("push: %v, want a refusal saying the branch cannot be packed", err)
	}
	if heads := gittest.Run(t, h.bare, "for-each-ref", "--format=%(refname)", "refs/heads/ace/"); heads != "" {
		t.Errorf("the remote got %q", heads)
	}
}
