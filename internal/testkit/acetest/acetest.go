// Package acetest builds the installation ace's end-to-end tests drive: a fake GitHub holding acme/widgets with
// one labelled issue, the repository's git remote over smart HTTP, a configuration pointing ace at both and at
// the fake agent, and the service opened on it.
//
// The test binary plays the fake agent (and ace, and the tmux launcher): its TestMain is testkit.Main with
// cli.Child and testkit.As("ace", cli.Main).
package acetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/aceworks/ace/internal/fakegithub"
	"github.com/aceworks/ace/internal/gittest"
	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/sandbox"
	"github.com/aceworks/ace/pkg/secrets"
	"github.com/aceworks/ace/pkg/service"
	"github.com/aceworks/ace/pkg/store"
)

// The forge's repository, its issue and the two users' tokens.
const (
	Repo       = "acme/widgets"
	Issue      = 193
	BotToken   = "ghs_botTokenValue0123456789"  // ace-bot's: ace's own, from $GITHUB_TOKEN
	HumanToken = "ghp_aliceTokenValue987654321" // alice's: she writes to the repository and labels the issue
)

// Forge is the GitHub side: the fake GitHub API and the git remote behind it.
type Forge struct {
	GH     *fakegithub.Server
	Git    *gittest.HTTPServer
	Remote string // the bare repository Git serves as acme/widgets.git
}

// NewForge starts, under dir, a git remote for acme/widgets (a README on main) and a fake GitHub with users
// ace-bot and alice (who may write) and issue 193, "Add a greeting" with body, labelled ace by alice.
func NewForge(t testing.TB, dir, body string) *Forge {
	t.Helper()
	gitRoot := filepath.Join(dir, "git")
	f := &Forge{
		Remote: gittest.BareRepo(t, filepath.Join(gitRoot, "acme"), "widgets", map[string]string{"README.md": "# widgets\n"}),
		Git:    gittest.NewHTTPServer(t, gitRoot, BotToken),
		GH:     fakegithub.New(t),
	}
	f.GH.AddUser("ace-bot", BotToken)
	f.GH.AddUser("alice", HumanToken)
	f.GH.AddRepo(Repo, fakegithub.RepoOptions{DefaultBranch: "main", CloneURL: f.Git.URL("acme/widgets.git")})
	f.GH.SetPermission(Repo, "alice", "write")
	f.GH.AddIssue(Repo, fakegithub.IssueOptions{Number: Issue, Title: "Add a greeting", Body: body, Author: "alice"})
	f.GH.Label(Repo, Issue, "ace", "alice")
	return f
}

// Configure points cfg's tracker at the forge: GitHub at its API, acme/widgets, the token from $GITHUB_TOKEN.
func (f *Forge) Configure(cfg *config.Config) {
	cfg.Tracker.Kind = "github"
	cfg.GitHub.APIURL = f.GH.URL()
	cfg.GitHub.Repos = []string{Repo}
	cfg.GitHub.TokenEnv = []string{"GITHUB_TOKEN"}
}

// Install is an ace installation on a forge whose only agent, "fake", is the fake agent.
type Install struct {
	*Forge
	Dir    string         // the test's directory: the git remote, the workspace root (Dir/root), the agent's files
	Exe    string         // this test binary, which plays the fake agent
	Script string         // the fake agent's script (one turn per prompt it receives)
	Record string         // where the fake agent records the prompts it receives, one JSON line each
	Cfg    *config.Config // the installation's configuration, for the test to change before it opens ace
}

// New builds an installation whose fake agent plays script (the issue asks for GREETING.md): config.Default,
// then the forge, the fake agent (committing as "fake agent"), a private tmux socket, timings short enough for
// tests, and runs that end when their pull request opens (pr.follow off).
func New(t testing.TB, script string) *Install {
	t.Helper()
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	in := &Install{
		Forge:  NewForge(t, dir, "Please add GREETING.md saying hello."),
		Dir:    dir,
		Exe:    exe,
		Script: filepath.Join(dir, "agent-script.txt"),
		Record: filepath.Join(dir, "prompts.jsonl"),
	}
	if err := os.WriteFile(in.Script, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Workspace.Root = filepath.Join(dir, "root")
	in.Configure(cfg)
	cfg.Agent.Default = "fake"
	cfg.Agents = map[string]config.AgentConfig{"fake": {Override: agents.Override{
		Command: fmt.Sprintf("%s demo-agent --script %s --record %s", exe, in.Script, in.Record),
		Env: map[string]string{"GIT_AUTHOR_NAME": "fake agent", "GIT_AUTHOR_EMAIL": "agent@ace.invalid",
			"GIT_COMMITTER_NAME": "fake agent", "GIT_COMMITTER_EMAIL": "agent@ace.invalid"},
	}}}
	cfg.Tmux.Socket = "ace-test-" + RandomHex(4)
	cfg.Tmux.StartupTimeout = config.D(20 * time.Second)
	cfg.Tmux.EnterDelay = config.D(100 * time.Millisecond)
	cfg.Monitor.Interval = config.D(200 * time.Millisecond)
	cfg.Monitor.Settle = config.D(100 * time.Millisecond)
	cfg.Monitor.Timeout = config.D(time.Minute)
	cfg.Poll.Interval = config.D(200 * time.Millisecond)
	cfg.PR.Follow = false
	in.Cfg = cfg
	return in
}

// Secrets resolves secrets from env alone, never from the process's environment.
func Secrets(env map[string]string) *secrets.Resolver {
	return secrets.NewResolver(secrets.Options{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
}

// boxes is this test binary's answer to whether boxes work here: the machine is the same for every service a
// test opens, and finding out runs bubblewrap three times (a few hundred runs in the e2e package).
var boxes = sandbox.NewDetector()

// Open opens ace's service with opts, and ends it when t ends: it stops the job queue (no step may be under way
// while the agents are ended), kills the tmux server (its agents, by PID) and closes the service. Unless opts
// says otherwise, the service shares the test binary's box detector. It watches its agents as ace run and ace
// poll do (service.Options.Watching): through one tmux control connection, not a tmux process per look (the
// e2e package started some 2,700 of those).
func Open(t testing.TB, opts service.Options) *service.Service {
	t.Helper()
	if opts.Boxes == nil {
		opts.Boxes = boxes
	}
	opts.Watching = true
	if opts.Config != nil && opts.Config.Store.URL == "" {
		seedStore(t, filepath.Join(opts.Config.Workspace.Root, "ace.db"))
	}
	svc, err := service.Open(context.Background(), opts)
	if err != nil {
		t.Fatalf("open ace: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = svc.Queue.Stop(ctx)
		_ = svc.Tmux.KillServer(ctx)
		_ = svc.Close()
	})
	return svc
}

// migrated is a SQLite store with ace's tables and River's, made once per test binary. A new root's store starts
// as a copy of it: migrating afresh took every world 2-3 s under load, River's migrations most of it. ace
// migrates a store it opens as always; a copy leaves it nothing to do.
var migrated struct {
	once sync.Once
	db   []byte
	err  error
}

// seedStore writes the migrated store at path, unless a store is there already.
func seedStore(t testing.TB, path string) {
	t.Helper()
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		return
	}
	migrated.once.Do(func() { migrated.db, migrated.err = migrate() })
	if migrated.err != nil {
		t.Fatalf("a migrated store: %v", migrated.err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, migrated.db, 0o600); err != nil {
		t.Fatal(err)
	}
}

// migrate makes a store in a directory of its own, migrates River's tables into it and returns its file (one
// file: closing the last connection folds the WAL into it).
func migrate() ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "acetest-store-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "ace.db")
	st, err := store.Open(ctx, path)
	if err != nil {
		return nil, err
	}
	m, err := rivermigrate.New(riversqlite.New(st.DB()), &rivermigrate.Config{Logger: slog.New(slog.DiscardHandler)})
	if err == nil {
		_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	}
	if err = errors.Join(err, st.Close()); err != nil {
		return nil, err
	}
	return os.ReadFile(path)
}

// RandomHex is n random bytes in hex, to name what must not clash with another test's (a tmux socket).
func RandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
