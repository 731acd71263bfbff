// Package gittest provides real git remotes for tests: bare repositories seeded with a commit, served over
// smart HTTP by `git http-backend` behind basic auth, the way GitHub serves https clones.
package gittest

import (
	"bytes"
	"context"
	"crypto/subtle"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// NoAutoGC is args, with the options that keep git from starting `git maintenance run --auto` (or `gc --auto`)
// first when args run a command that would (a commit, a merge, a fetch…): a process each time, with nothing to do
// in a test's repository of a few commits. Other commands are left as they are: `git config gc.auto` must still
// read the repository's own setting.
func NoAutoGC(args ...string) []string {
	if len(args) == 0 || !slices.Contains(autoGCCommands(), args[0]) {
		return args
	}
	return append([]string{"-c", "gc.auto=0", "-c", "maintenance.auto=false"}, args...)
}

// autoGCCommands are git's commands that run automatic maintenance when they end.
func autoGCCommands() []string {
	return []string{"commit", "merge", "fetch", "pull", "am", "rebase", "cherry-pick", "revert", "stash"}
}

// Run runs git in dir and fails the test on error, returning trimmed stdout.
func Run(t testing.TB, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", NoAutoGC(args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=test", "GIT_AUTHOR_EMAIL=test@ace.invalid",
		"GIT_COMMITTER_NAME=test", "GIT_COMMITTER_EMAIL=test@ace.invalid")
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, stderr)
	}
	return strings.TrimSpace(string(out))
}

// WorkRepo creates a working repository in a fresh temporary directory whose branch "main" holds one empty
// commit, and returns its path: where a CLI works.
func WorkRepo(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	Run(t, dir, "init", "-q", "-b", "main")
	Run(t, dir, "commit", "-q", "--allow-empty", "-m", "init")
	return dir
}

// BareRepo creates <parent>/<name>.git, a bare repository whose branch "main" holds one commit with files
// (path → content; nil gives a README), and returns its path. The commit is written straight into it by
// git fast-import: a working repository pushing its first commit took five times the processes (every e2e world
// makes one).
func BareRepo(t testing.TB, parent, name string, files map[string]string) string {
	t.Helper()
	if files == nil {
		files = map[string]string{"README.md": "# " + name + "\n"}
	}
	bare := filepath.Join(parent, name+".git")
	if err := os.MkdirAll(filepath.Dir(bare), 0o755); err != nil {
		t.Fatal(err)
	}
	Run(t, parent, "init", "-q", "--bare", "-b", "main", bare)
	var in bytes.Buffer
	paths := slices.Sorted(maps.Keys(files))
	for i, p := range paths {
		fmt.Fprintf(&in, "blob\nmark :%d\ndata %d\n%s\n", i+1, len(files[p]), files[p])
	}
	const msg = "initial commit\n"
	when := time.Now().Unix()
	fmt.Fprintf(&in, "commit refs/heads/main\nauthor test <test@ace.invalid> %d +0000\ncommitter test <test@ace.invalid> %d +0000\ndata %d\n%s",
		when, when, len(msg), msg)
	for i, p := range paths {
		fmt.Fprintf(&in, "M 100644 :%d %s\n", i+1, p)
	}
	in.WriteString("\n")
	runStdin(t, bare, in.Bytes(), "fast-import", "--quiet")
	return bare
}

// runStdin is Run with stdin.
func runStdin(t testing.TB, dir string, stdin []byte, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir, cmd.Stdin = dir, bytes.NewReader(stdin)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
}

// HTTPServer serves every bare repository under Root over git's smart HTTP protocol. Requests must carry basic
// auth with the given password (any user name, as GitHub accepts "x-access-token"); others get 401.
type HTTPServer struct {
	Root   string
	server *httptest.Server
	denied atomic.Int64
	pushes atomic.Int64
	hook   atomic.Pointer[func(*http.Request)]
}

// OnRequest has f called with every request, authenticated or not, while the client waits for the answer: a
// test can look at the client's processes then.
func (s *HTTPServer) OnRequest(f func(*http.Request)) { s.hook.Store(&f) }

// NewHTTPServer starts a smart-HTTP server for the bare repositories under root, closed when the test ends.
func NewHTTPServer(t testing.TB, root, password string) *HTTPServer {
	t.Helper()
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	s := &HTTPServer{Root: root}
	backend := &cgi.Handler{
		Path: gitPath,
		Args: []string{"http-backend"},
		// REMOTE_USER set means "authenticated" to http-backend, which only then accepts pushes; the wrapper below
		// does the authentication.
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "REMOTE_USER=gittest",
			// No automatic gc after each push: a process per push, and the remotes of a test are small.
			"GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_0=receive.autogc", "GIT_CONFIG_VALUE_0=false",
			"GIT_CONFIG_KEY_1=gc.auto", "GIT_CONFIG_VALUE_1=0"},
	}
	s.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f := s.hook.Load(); f != nil {
			(*f)(r)
		}
		_, pass, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(pass), []byte(password)) != 1 {
			s.denied.Add(1)
			w.Header().Set("WWW-Authenticate", `Basic realm="gittest"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		if strings.HasSuffix(r.URL.Path, "/git-receive-pack") {
			s.pushes.Add(1)
		}
		if r.ContentLength < 0 && r.Body != nil {
			// A streamed (chunked) body, as git sends a pack over http.postBuffer: Go's CGI handler takes only a
			// body of known length, which the web server in front of http-backend makes of it.
			b, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
			r.TransferEncoding = nil
		}
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(s.server.Close)
	return s
}

// URL is the clone URL of the bare repository <Root>/<rel> (e.g. "acme/widgets.git").
func (s *HTTPServer) URL(rel string) string { return s.server.URL + "/" + rel }

// Denied counts requests refused for missing or wrong credentials.
func (s *HTTPServer) Denied() int64 { return s.denied.Load() }

// Pushes counts receive-pack requests (pushes) that were let through.
func (s *HTTPServer) Pushes() int64 { return s.pushes.Load() }
