// Package workspace turns (repo, issue, branch) into a ready working copy under
// <root>/worktrees/<owner>/<repo>/<issue>/ and later pushes what the agent did. A bare mirror per repository
// (<root>/mirrors/<owner>/<repo>.git, fetched once per run) holds the objects; each working copy is a clone that
// shares them (alternates), so it is as isolated as a clone and nearly as fast as `git worktree add`. The
// mirror is cloned and fetched by the git CLI with the credential in its environment only (mirror.go); a push
// sends a pack git builds in a box to the remote of ace's record, the credential as basic auth in memory
// (push.go). Which remote gets which credential is the tracker's answer (Auth). No credential is ever in an
// argument or written to disk. Once an agent has had a working copy, ace runs git
// there only in a box of its own (workgit.go) and reads what the copy is for from its own record (record.go).
package workspace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aceworks/ace/pkg/sandbox"
	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// Options configure a Manager.
type Options struct {
	Root        string
	AuthorName  string
	AuthorEmail string
	Logger      *slog.Logger
	// GitPath is the git binary used for local operations (status, add, commit); default "git" on PATH.
	GitPath string
	// Boxes says whether boxes work here: git on a working copy runs in one where they do (workgit.go). nil
	// detects them for this manager alone.
	Boxes *sandbox.Detector
	// GitTimeout bounds one git command on a working copy (workspace.git_timeout); default DefaultGitTimeout.
	GitTimeout time.Duration
	// Auth says what ace's git sends each remote; nil sends nothing to any.
	Auth Auth
	// OwnObjects makes each working copy hold its own objects, copied from the mirror (git clone --no-local),
	// instead of borrowing them through alternates: a copy then holds what the mirror's branches reach and no
	// more, and a box needs no mirror to show it (ace eval's copies, whose mirror holds only a task's past).
	OwnObjects bool
}

// Auth is the tracker as ace's git asks it for a remote's credential: a user and a secret sent as basic auth to
// remoteURL over http(s), or nothing (ok false) — a remote off the tracker's own host, whatever named it (an
// agent's origin, a local tracker's path), gets nothing.
type Auth interface {
	GitAuth(remoteURL string) (user, secret string, ok bool)
}

// DefaultGitTimeout is workspace.git_timeout's default.
const DefaultGitTimeout = 2 * time.Minute

// Manager provisions working copies under Root.
type Manager struct {
	o Options

	binMu sync.Mutex
	bin   *gitBin // the git binary, found once
}

// New returns a manager for root.
func New(o Options) (*Manager, error) {
	if o.Root == "" {
		return nil, errors.New("workspace: empty root")
	}
	abs, err := filepath.Abs(o.Root)
	if err != nil {
		return nil, err
	}
	o.Root = abs
	if o.AuthorName == "" {
		o.AuthorName = "ace"
	}
	if o.AuthorEmail == "" {
		o.AuthorEmail = "ace@localhost"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.GitPath == "" {
		o.GitPath = "git"
	}
	if o.Boxes == nil {
		o.Boxes = sandbox.NewDetector()
	}
	if o.GitTimeout <= 0 {
		o.GitTimeout = DefaultGitTimeout
	}
	return &Manager{o: o}, nil
}

// Spec asks for a working copy.
type Spec struct {
	Repo       string // owner/name
	Issue      int
	RemoteURL  string // https URL, file URL or local path
	BaseBranch string
	Branch     string
	// Copy numbers one of several working copies of the issue (a best-of-N attempt, 1…N), beside the issue's
	// own: <issue>-<copy>. 0 is the issue's own copy.
	Copy int
}

var nameRe = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// repoParts validates "owner/name" before it becomes part of a path.
func repoParts(repo string) (string, string, error) {
	owner, name, ok := strings.Cut(repo, "/")
	for _, p := range []string{owner, name} {
		if !ok || !nameRe.MatchString(p) || p == "." || p == ".." {
			return "", "", fmt.Errorf("repository %q: want owner/name of letters, digits, '.', '_' and '-'", repo)
		}
	}
	return owner, name, nil
}

// under joins elems to root and makes sure the result stays under root.
func (m *Manager) under(elems ...string) (string, error) {
	p := filepath.Clean(filepath.Join(append([]string{m.o.Root}, elems...)...))
	if !strings.HasPrefix(p, m.o.Root+string(filepath.Separator)) {
		return "", fmt.Errorf("path %s escapes the workspace root", p)
	}
	return p, nil
}

// Path is where the working copy of repo's issue lives.
func (m *Manager) Path(repo string, issue int) (string, error) { return m.CopyPath(repo, issue, 0) }

// CopyPath is working copy k of repo's issue (Spec.Copy): <issue>-<k>, or Path's for 0.
func (m *Manager) CopyPath(repo string, issue, k int) (string, error) {
	owner, name, err := repoParts(repo)
	if err != nil {
		return "", err
	}
	if issue <= 0 {
		return "", fmt.Errorf("issue number %d: must be positive", issue)
	}
	if k < 0 {
		return "", fmt.Errorf("working copy %d of issue %d: must not be negative", k, issue)
	}
	leaf := strconv.Itoa(issue)
	if k > 0 {
		leaf += "-" + strconv.Itoa(k)
	}
	return m.under("worktrees", owner, name, leaf)
}

// MirrorPath is repo's bare mirror: ace reads what a repository asks of it (its workflow file) from there, never
// from a working copy an agent can edit.
func (m *Manager) MirrorPath(repo string) (string, error) { return m.mirrorPath(repo) }

func (m *Manager) mirrorPath(repo string) (string, error) {
	owner, name, err := repoParts(repo)
	if err != nil {
		return "", err
	}
	return m.under("mirrors", owner, name+".git")
}

// credentialFor is what Auth gives rawURL: a user and a secret, or "" for both.
func (m *Manager) credentialFor(rawURL string) (user, secret string) {
	if m.o.Auth == nil {
		return "", ""
	}
	if user, secret, ok := m.o.Auth.GitAuth(rawURL); ok && secret != "" {
		return user, secret
	}
	return "", ""
}

// Prepare returns the working copy for spec, creating or reusing it. Local commits of an existing copy are
// never thrown away; a broken copy is moved aside, not deleted.
func (m *Manager) Prepare(ctx context.Context, spec Spec) (*Workspace, error) {
	dir, err := m.CopyPath(spec.Repo, spec.Issue, spec.Copy)
	if err != nil {
		return nil, err
	}
	if spec.Branch == "" || spec.BaseBranch == "" {
		return nil, errors.New("workspace: branch and base branch are required")
	}
	mirror, err := m.syncMirror(ctx, spec)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(dir); err == nil {
		ws, err := m.OpenCopy(ctx, spec.Repo, spec.Issue, spec.Copy)
		if err == nil {
			m.o.Logger.InfoContext(ctx, "reusing working copy", "dir", dir)
			// A copy an older ace made excludes its files in .git/info/exclude, which hides them from agents.
			if err := ws.Exclude(ctx, DefaultExcludes...); err != nil {
				return nil, fmt.Errorf("exclude ace's files from commits: %w", err)
			}
			return ws, nil
		}
		aside := fmt.Sprintf("%s.broken-%s", dir, time.Now().UTC().Format("20060102T150405"))
		m.o.Logger.WarnContext(ctx, "working copy is broken; moving it aside", "dir", dir, "to", aside, "err", err)
		if err := os.Rename(dir, aside); err != nil {
			return nil, fmt.Errorf("move broken working copy aside: %w", err)
		}
		if from, err := m.recordPath(dir); err == nil {
			if to, err := m.recordPath(aside); err == nil {
				_ = os.Rename(from, to)
			}
		}
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, err
	}
	if err := m.makeCopy(ctx, spec, mirror, dir); err != nil {
		return nil, err
	}
	return m.OpenCopy(ctx, spec.Repo, spec.Issue, spec.Copy)
}

// DefaultExcludes are ace's files in a working copy: never committed, never in .gitignore.
var DefaultExcludes = []string{"/ACE_TASK.md", "/.ace/", "/.mcp.json"}

// redactURL drops userinfo from a URL for messages.
func redactURL(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		if j := strings.LastIndex(u[i+3:], "@"); j >= 0 {
			return u[:i+3] + u[i+3+j+1:]
		}
	}
	return u
}

// Open returns the existing working copy of repo's issue, as ace's record says it is (record.go).
func (m *Manager) Open(ctx context.Context, repo string, issue int) (*Workspace, error) {
	return m.OpenCopy(ctx, repo, issue, 0)
}

// OpenCopy is Open of the issue's working copy k (Spec.Copy).
func (m *Manager) OpenCopy(ctx context.Context, repo string, issue, k int) (*Workspace, error) {
	dir, err := m.CopyPath(repo, issue, k)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("open working copy %s: not a directory ace made (%v)", dir, err)
	}
	ws := &Workspace{Dir: dir, Repo: repo, Issue: issue, m: m}
	rec, err := m.readRecord(dir)
	if errors.Is(err, os.ErrNotExist) {
		rec, err = m.adopt(ctx, ws)
	}
	if err != nil {
		return nil, err
	}
	if rec.Repo != repo || rec.Issue != issue {
		return nil, fmt.Errorf("open working copy %s: ace's record is of %s#%d", dir, rec.Repo, rec.Issue)
	}
	ws.RemoteURL, ws.Branch, ws.BaseBranch, ws.BaseCommit = rec.RemoteURL, rec.Branch, rec.BaseBranch, rec.BaseCommit
	return ws, nil
}

// Remove deletes the working copy of repo's issue.
func (m *Manager) Remove(ctx context.Context, repo string, issue int) error {
	return m.RemoveCopy(ctx, repo, issue, 0)
}

// RemoveCopy deletes working copy k of repo's issue (CopyPath) and its record.
func (m *Manager) RemoveCopy(_ context.Context, repo string, issue, k int) error {
	dir, err := m.CopyPath(repo, issue, k)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	rec, err := m.recordPath(dir)
	if err != nil {
		return err
	}
	if err := os.Remove(rec); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// git runs git on the host in dir, as ace: only on ace's own repositories (the mirror, a copy it is making,
// which no agent has had yet) or none ("config --global"), never on a working copy (workgit.go).
func (m *Manager) git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, m.o.GitPath, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_AUTHOR_NAME="+m.o.AuthorName, "GIT_AUTHOR_EMAIL="+m.o.AuthorEmail,
		"GIT_COMMITTER_NAME="+m.o.AuthorName, "GIT_COMMITTER_EMAIL="+m.o.AuthorEmail)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(ee.Stderr)))
		}
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

// openShared opens a working copy whose objects live partly in its mirror (alternates with absolute paths,
// which go-git resolves only against a filesystem rooted at /).
func openShared(dir string) (*git.Repository, error) {
	if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
		return nil, git.ErrRepositoryNotExists
	}
	wt := osfs.New(dir)
	dot, err := wt.Chroot(".git")
	if err != nil {
		return nil, err
	}
	st := filesystem.NewStorageWithOptions(dot, cache.NewObjectLRUDefault(), filesystem.Options{AlternatesFS: osfs.New("/")})
	return git.Open(st, wt)
}
