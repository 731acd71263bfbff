package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/gittest"
	"github.com/aceworks/ace/pkg/sanitize"
	"github.com/aceworks/ace/pkg/tracker/github"
	"github.com/aceworks/ace/pkg/untrusted"
)

const token = "ghs_workspaceTestToken123"

// trackerAuth is the GitHub tracker whose API is apiURL ("" for github.com's), acting with tok: what decides
// which remote gets which credential.
func trackerAuth(t *testing.T, apiURL, tok string) Auth {
	t.Helper()
	c, err := github.New(context.Background(), github.Options{APIURL: apiURL, Token: tok})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func setup(t *testing.T) (*Manager, Spec, string) {
	t.Helper()
	m, spec, bare, _ := setupServer(t)
	return m, spec, bare
}

func setupServer(t *testing.T) (*Manager, Spec, string, *gittest.HTTPServer) {
	t.Helper()
	gitRoot := t.TempDir()
	bare := gittest.BareRepo(t, filepath.Join(gitRoot, "acme"), "widgets", map[string]string{"README.md": "hi\n", "src/a.go": "package a\n"})
	srv := gittest.NewHTTPServer(t, gitRoot, token)
	m, err := New(Options{Root: t.TempDir(), Auth: trackerAuth(t, "http://127.0.0.1/", token)})
	if err != nil {
		t.Fatal(err)
	}
	spec := Spec{Repo: "acme/widgets", Issue: 7, RemoteURL: srv.URL("acme/widgets.git"), BaseBranch: "main",
		Branch: "ace/7-fix"}
	return m, spec, bare, srv
}

func TestPrepareCommitPushOverSmartHTTPWithoutTokenOnDisk(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m, spec, bare := setup(t)
	ws, err := m.Prepare(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(m.o.Root, "worktrees", "acme", "widgets", "7"); ws.Dir != want {
		t.Fatalf("dir %s, want %s", ws.Dir, want)
	}
	if ws.Branch != "ace/7-fix" || ws.BaseBranch != "main" {
		t.Fatalf("branch %s base %s", ws.Branch, ws.BaseBranch)
	}
	// Objects are shared with the mirror, not copied.
	if b, err := os.ReadFile(filepath.Join(ws.Dir, ".git", "objects", "info", "alternates")); err != nil || !strings.Contains(string(b), "mirrors") {
		t.Fatalf("alternates: %q %v", b, err)
	}
	if err := WriteTask(untrusted.New(ws.Dir), Task{Repo: spec.Repo, Issue: 7, Title: "Fix", Body: "body", Branch: ws.Branch, BaseBranch: "main"}); err != nil {
		t.Fatal(err)
	}
	if changed, _ := ws.HasChanges(ctx); changed {
		t.Fatal("ACE_TASK.md shows up as a change: it must be git-excluded")
	}
	if n, _ := ws.CommitsAhead(ctx); n != 0 {
		t.Fatalf("ahead = %d before any work", n)
	}
	if err := os.WriteFile(filepath.Join(ws.Dir, "fix.txt"), []byte("fixed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, committed, err := ws.CommitAll(ctx, "fix"); err != nil || !committed {
		t.Fatalf("commit: %v %v", committed, err)
	}
	if n, _ := ws.CommitsAhead(ctx); n != 1 {
		t.Fatalf("ahead = %d, want 1", n)
	}
	m.o.Auth = trackerAuth(t, "http://127.0.0.1/", "wrong-token")
	if err := ws.Push(ctx); err == nil {
		t.Fatal("push with a wrong token succeeded")
	}
	m.o.Auth = trackerAuth(t, "http://127.0.0.1/", token)
	if err := ws.Push(ctx); err != nil {
		t.Fatal(err)
	}
	if got := gittest.Run(t, bare, "log", "--format=%s", "-1", "ace/7-fix"); got != "fix" {
		t.Fatalf("remote branch head %q", got)
	}
	_ = filepath.Walk(m.o.Root, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), token) {
				t.Errorf("token written to %s", p)
			}
		}
		return nil
	})
	cfg, _ := os.ReadFile(filepath.Join(ws.Dir, ".git", "config"))
	if !strings.Contains(string(cfg), spec.RemoteURL) || strings.Contains(string(cfg), "@") {
		t.Errorf(".git/config origin: %s", cfg)
	}
}

func TestPrepareReusesCopyAndKeepsLocalCommits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m, spec, _ := setup(t)
	ws, err := m.Prepare(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws.Dir, "work.txt"), []byte("x"), 0o644)
	if _, _, err := ws.CommitAll(ctx, "local work"); err != nil {
		t.Fatal(err)
	}
	again, err := m.Prepare(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := again.CommitsAhead(ctx); n != 1 {
		t.Fatalf("re-prepare lost local commits: ahead = %d", n)
	}
}

func TestBrokenCopyIsMovedAside(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m, spec, _ := setup(t)
	dir, _ := m.Path(spec.Repo, spec.Issue)
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "junk"), []byte("not a repo"), 0o644)
	if _, err := m.Prepare(ctx, spec); err != nil {
		t.Fatal(err)
	}
	aside, _ := filepath.Glob(dir + ".broken-*")
	if len(aside) != 1 {
		t.Fatalf("broken copy not moved aside: %v", aside)
	}
	if _, err := os.Stat(filepath.Join(aside[0], "junk")); err != nil {
		t.Fatal("the broken copy's files were lost")
	}
}

func TestPathSafety(t *testing.T) {
	m, _ := New(Options{Root: t.TempDir()})
	for _, bad := range []struct {
		repo  string
		issue int
	}{{"../x", 1}, {"a/b/c", 1}, {"a/..", 1}, {"a", 1}, {"a/b", 0}, {"a/b", -3}, {"a b/c", 1}} {
		if p, err := m.Path(bad.repo, bad.issue); err == nil {
			t.Errorf("Path(%q, %d) = %s, want an error", bad.repo, bad.issue, p)
		}
	}
}

func TestTaskSanitizesAndFilters(t *testing.T) {
	dir := t.TempDir()
	trig := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	err := WriteTask(untrusted.New(dir), Task{Repo: "o/r", Issue: 3, Title: "T\x1b[31mred", Branch: "b", BaseBranch: "main", TriggeredAt: trig,
		Body:     "visible<!-- hidden instructions -->\u202eevil\u200b\x00" + strings.Repeat("x", sanitize.MaxText+10),
		Comments: []TaskComment{{Author: "a", Body: "early", CreatedAt: trig.Add(-time.Hour)}, {Author: "b", Body: "late", CreatedAt: trig.Add(time.Hour)}}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "ACE_TASK.md"))
	s := string(b)
	for _, bad := range []string{"hidden instructions", "\u202e", "\u200b", "\x00", "\x1b", "late"} {
		if strings.Contains(s, bad) {
			t.Errorf("ACE_TASK.md contains %q", bad)
		}
	}
	for _, want := range []string{"visibleevil", "early", "cut by ace", ".ace/DONE", ".ace/QUESTION"} {
		if !strings.Contains(s, want) {
			t.Errorf("ACE_TASK.md lacks %q", want)
		}
	}
}

func TestBranchName(t *testing.T) {
	if got := BranchName("ace/{issue}-{slug}", 193, "Fix: the *login* page — ünïcode & stuff!"); got != "ace/193-fix-the-login-page-n-code-stuff" {
		t.Errorf("got %q", got)
	}
	if got := BranchName("", 5, strings.Repeat("word ", 30)); len(got) > len("ace/5-")+40 {
		t.Errorf("slug too long: %q", got)
	}
	if got := BranchName("ace/{issue}-{slug}", 193, "Fix the \x1b[31mgreeting\x1b[0m"); got != "ace/193-fix-the-greeting" {
		t.Errorf("escape sequences in the title: got %q", got)
	}
	if got := BranchName("", 8, "a\u202eb\u200bc <!-- x -->"); got != "ace/8-abc" {
		t.Errorf("invisible characters in the title: got %q", got)
	}
	if got := BranchName("", 5, "!!!"); got != "ace/5-issue" {
		t.Errorf("got %q", got)
	}
}

func TestCopiesOfOneIssueStandApart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m, spec, _ := setup(t)
	own, err := m.Prepare(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	second := spec
	second.Copy, second.Branch = 2, spec.Branch+"-2"
	ws, err := m.Prepare(ctx, second)
	if err != nil {
		t.Fatal(err)
	}
	if ws.Dir != own.Dir+"-2" || ws.Branch != second.Branch {
		t.Fatalf("copy 2 is %s on %s, want %s-2 on %s", ws.Dir, ws.Branch, own.Dir, second.Branch)
	}
	again, err := m.OpenCopy(ctx, spec.Repo, spec.Issue, 2)
	if err != nil || again.Branch != second.Branch {
		t.Fatalf("OpenCopy(2) = %v, %v: want the copy on %s", again, err, second.Branch)
	}
	if first, err := m.Open(ctx, spec.Repo, spec.Issue); err != nil || first.Branch != spec.Branch {
		t.Fatalf("the issue's own copy after copy 2: %v, %v", first, err)
	}
	if p, err := m.CopyPath(spec.Repo, spec.Issue, -1); err == nil {
		t.Errorf("CopyPath(-1) = %s, want an error", p)
	}
}

func TestDiffSizeCountsTheBranchAgainstItsBase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m, spec, _ := setup(t)
	ws, err := m.Prepare(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := ws.DiffSize(ctx); err != nil || d != (DiffSize{}) {
		t.Fatalf("DiffSize before any work = %+v, %v", d, err)
	}
	os.WriteFile(filepath.Join(ws.Dir, "a.txt"), []byte("1\n2\n3\n"), 0o644)
	os.WriteFile(filepath.Join(ws.Dir, "b.bin"), []byte{0, 1, 2}, 0o644)
	if _, _, err := ws.CommitAll(ctx, "work"); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws.Dir, "uncommitted.txt"), []byte("x\n"), 0o644)
	if d, err := ws.DiffSize(ctx); err != nil || d != (DiffSize{Files: 2, Lines: 4}) {
		t.Fatalf("DiffSize = %+v, %v; want 2 files, 4 lines (3 added, a binary file as 1)", d, err)
	}
}
