package service_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aceworks/ace/internal/fakegithub"
	"github.com/aceworks/ace/internal/gittest"
	"github.com/aceworks/ace/internal/pgtest"
	"github.com/aceworks/ace/pkg/cli"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/secrets"
	"github.com/aceworks/ace/pkg/service"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// TestMain lets the test binary play the parts tmux panes run (the launcher, the fake agent) and ace itself, and
// stops the PostgreSQL cluster the tests started.
func TestMain(m *testing.M) {
	if code, ok := cli.Child(os.Args[1:]); ok {
		os.Exit(code)
	}
	if len(os.Args) > 1 && os.Args[1] == "ace" {
		os.Args = os.Args[1:]
		os.Exit(cli.Main())
	}
	os.Exit(pgtest.Main(m))
}

const (
	repo     = "acme/widgets"
	issue    = 193
	botToken = "ghs_botTokenValue0123456789"
	human    = "ghp_aliceTokenValue987654321"
)

// workScript is a well-behaved agent: it does the work, commits and follows the done protocol.
const workScript = `busy 300ms
write GREETING.md Hello from the fake agent!\n
sh git add GREETING.md && git commit -q -m "Add GREETING.md"
done Added GREETING.md with a greeting.
`

// pgConfig is an ace installation on PostgreSQL: fake GitHub with one labelled issue, a smart-HTTP git remote,
// the fake agent, a private tmux socket, and the store at url.
func pgConfig(t *testing.T, url string) install {
	t.Helper()
	dir := t.TempDir()
	gitRoot := filepath.Join(dir, "git")
	remote := gittest.BareRepo(t, filepath.Join(gitRoot, "acme"), "widgets", map[string]string{"README.md": "# widgets\n"})
	git := gittest.NewHTTPServer(t, gitRoot, botToken)
	gh := fakegithub.New(t)
	gh.AddUser("ace-bot", botToken)
	gh.AddUser("alice", human)
	gh.AddRepo(repo, fakegithub.RepoOptions{DefaultBranch: "main", CloneURL: git.URL("acme/widgets.git")})
	gh.SetPermission(repo, "alice", "write")
	gh.AddIssue(repo, fakegithub.IssueOptions{Number: issue, Title: "Add a greeting", Body: "Please add GREETING.md.", Author: "alice"})
	gh.Label(repo, issue, "ace", "alice")

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "agent-script.txt")
	if err := os.WriteFile(script, []byte(workScript), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Store.URL = url
	cfg.Workspace.Root = filepath.Join(dir, "root")
	cfg.GitHub.APIURL = gh.URL()
	cfg.GitHub.Repos = []string{repo}
	cfg.GitHub.TokenEnv = []string{"GITHUB_TOKEN"}
	cfg.Agent.Default = "fake"
	cfg.Agents = map[string]config.AgentConfig{"fake": {
		Command: fmt.Sprintf("%s demo-agent --script %s --record %s", exe, script, filepath.Join(dir, "prompts.jsonl")),
		Env: map[string]string{"GIT_AUTHOR_NAME": "fake agent", "GIT_AUTHOR_EMAIL": "agent@ace.invalid",
			"GIT_COMMITTER_NAME": "fake agent", "GIT_COMMITTER_EMAIL": "agent@ace.invalid"},
	}}
	cfg.Tmux.Socket = fmt.Sprintf("ace-pg-%d-%d", os.Getpid(), time.Now().UnixNano()%1e6)
	cfg.Tmux.StartupTimeout = config.D(20 * time.Second)
	cfg.Tmux.EnterDelay = config.D(100 * time.Millisecond)
	cfg.Monitor.Interval = config.D(200 * time.Millisecond)
	cfg.Monitor.Settle = config.D(100 * time.Millisecond)
	cfg.Monitor.Timeout = config.D(time.Minute)
	cfg.Poll.Interval = config.D(200 * time.Millisecond)
	cfg.PR.Follow = false                // a run ends when its pull request opens
	cfg.Sandbox.Mode = config.SandboxOff // the fake agent records its prompts outside any box
	return install{cfg: cfg, gh: gh, remote: remote, exe: exe}
}

type install struct {
	cfg    *config.Config
	gh     *fakegithub.Server
	remote string // the bare repository behind the git server
	exe    string
}

func openService(t *testing.T, cfg *config.Config, exe string) *service.Service {
	t.Helper()
	env := map[string]string{"GITHUB_TOKEN": botToken}
	svc, err := service.Open(context.Background(), service.Options{
		Config:     cfg,
		Secrets:    secrets.NewResolver(secrets.Options{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}),
		Logger:     slog.New(slog.DiscardHandler),
		Executable: exe,
		Tune:       func(o *workflow.Options) { o.IssueCheckEvery = 100 * time.Millisecond },
	})
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

// TestIssueBecomesPullRequestOnPostgres: with [store] url naming a PostgreSQL database, the store and River's
// queue live there (riverpgxv5): a run of the fake agent goes through to its pull request as River jobs that are
// worked and snoozed on PostgreSQL, nothing lands in a SQLite file, and `ace ls --json` of another ace, pointed at
// the database by ACE_STORE_URL alone, lists the run.
func TestIssueBecomesPullRequestOnPostgres(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	in := pgConfig(t, url)
	cfg, gh, exe := in.cfg, in.gh, in.exe
	svc := openService(t, cfg, exe)
	if svc.Store.Kind() != store.PostgreSQL {
		t.Fatalf("store kind %s, want postgres", svc.Store.Kind())
	}
	if err := svc.StartQueue(context.Background()); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	start := time.Now()
	r, err := svc.Engine.Open(ctx, workflow.Request{Repo: repo, Issue: issue, NewAttempt: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Engine.Follow(ctx, r, workflow.UntilSettled); err != nil {
		t.Fatalf("drive: %v (run at %s, %s)", err, r.Step, r.Error)
	}
	t.Logf("issue to pull request on PostgreSQL in %s", time.Since(start).Round(time.Millisecond))
	if r.Status != store.StatusDone {
		t.Fatalf("run ended %s at %s: %s", r.Status, r.Step, r.Error)
	}
	if prs := gh.PRs(repo); len(prs) != 1 || prs[0].Head != r.Branch {
		t.Fatalf("pull requests %+v, want one from %s", prs, r.Branch)
	}
	if got := gittest.Run(t, in.remote, "show", r.Branch+":GREETING.md"); got != "Hello from the fake agent!" {
		t.Errorf("pushed GREETING.md = %q", got)
	}

	// River's jobs are rows of the PostgreSQL database, and no SQLite store was made. Stopping the queue waits
	// for River to record the job's completion.
	if err := svc.Queue.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var jobs, snoozes, runs int
	err = conn.QueryRow(ctx, `SELECT count(*), coalesce(max((metadata->>'snoozes')::int), 0) FROM river_job
		WHERE kind = 'ace_run' AND state = 'completed'`).Scan(&jobs, &snoozes)
	if err != nil || jobs != 1 {
		t.Fatalf("completed run jobs in PostgreSQL: %d (%v), want 1", jobs, err)
	}
	if snoozes == 0 {
		t.Errorf("the run's job never snoozed: waiting for the agent held a worker")
	}
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM runs WHERE issue = $1 AND status = 'done'", issue).Scan(&runs); err != nil || runs != 1 {
		t.Fatalf("done runs in PostgreSQL: %d (%v)", runs, err)
	}
	if _, err := os.Stat(filepath.Join(cfg.Workspace.Root, "ace.db")); !os.IsNotExist(err) {
		t.Fatalf("a SQLite store was made beside the PostgreSQL one: %v", err)
	}

	// ace ls --json on another machine's root, told the database by ACE_STORE_URL only.
	other := t.TempDir()
	cmd := exec.Command(exe, "ace", "ls", "--json")
	cmd.Env = append(os.Environ(), "ACE_STORE_URL="+url, "AGENT_WORKSPACE_ROOT="+filepath.Join(other, "root"),
		"HOME="+other, "XDG_CONFIG_HOME="+filepath.Join(other, "config"), "ACE_CONFIG=")
	cmd.Dir = other
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ace ls --json: %v\n%s", err, out)
	}
	var listed []store.Run
	if err := json.Unmarshal(out, &listed); err != nil {
		t.Fatalf("ace ls --json printed %q: %v", out, err)
	}
	if len(listed) != 1 || listed[0].Issue != issue || listed[0].Status != store.StatusDone || listed[0].PRURL == "" {
		t.Fatalf("ace ls --json with ACE_STORE_URL listed %+v, want the done run of #%d", listed, issue)
	}
}

// TestHostsOpenAFreshPostgresAtOnce: ace processes starting together on an empty database all come up: ace's
// migrations and River's are each applied once, whoever wins.
func TestHostsOpenAFreshPostgresAtOnce(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	in := pgConfig(t, url)
	cfg, exe := in.cfg, in.exe
	const hosts = 4
	errs := make([]error, hosts)
	var wg sync.WaitGroup
	for i := range hosts {
		c := *cfg
		c.Workspace.Root = filepath.Join(t.TempDir(), "root")
		wg.Go(func() {
			env := map[string]string{"GITHUB_TOKEN": botToken}
			svc, err := service.Open(context.Background(), service.Options{
				Config: &c, Executable: exe, Logger: slog.New(slog.DiscardHandler),
				Secrets: secrets.NewResolver(secrets.Options{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}),
			})
			if err == nil {
				err = svc.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("host %d: %v", i, err)
		}
	}
}
