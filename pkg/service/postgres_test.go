package service_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aceworks/ace/internal/gittest"
	"github.com/aceworks/ace/internal/pgtest"
	"github.com/aceworks/ace/internal/testkit"
	"github.com/aceworks/ace/internal/testkit/acetest"
	"github.com/aceworks/ace/pkg/cli"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/service"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// TestMain lets the test binary play the parts tmux panes run (the launcher, the fake agent) and ace itself, and
// stops the PostgreSQL cluster the tests started. The fleet tests wait on hosts' timers most of their time: they
// run all at once (testkit.Widen).
func TestMain(m *testing.M) {
	os.Exit(testkit.Main(m, func(m *testing.M) int { testkit.Widen(); return pgtest.Main(m) }, cli.Child, testkit.As("ace", cli.Main)))
}

const (
	repo     = acetest.Repo
	issue    = acetest.Issue
	botToken = acetest.BotToken
)

// workScript is a well-behaved agent: it does the work, commits and follows the done protocol.
const workScript = `busy 300ms
write GREETING.md Hello from the fake agent!\n
sh git add GREETING.md && git commit -q -m "Add GREETING.md"
done Added GREETING.md with a greeting.
`

// pgConfig is an ace installation on PostgreSQL, its store at url, its fake agent playing workScript.
func pgConfig(t *testing.T, url string) *acetest.Install {
	t.Helper()
	in := acetest.New(t, workScript)
	in.Cfg.Store.URL = url
	in.Cfg.Sandbox.Mode = config.SandboxOff // the fake agent records its prompts outside any box
	return in
}

func openService(t *testing.T, cfg *config.Config, exe string) *service.Service {
	t.Helper()
	return acetest.Open(t, service.Options{
		Config:     cfg,
		Secrets:    acetest.Secrets(map[string]string{"GITHUB_TOKEN": botToken}),
		Logger:     slog.New(slog.DiscardHandler),
		Executable: exe,
		Tune:       func(o *workflow.Options) { o.IssueCheckEvery = 100 * time.Millisecond },
	})
}

// TestIssueBecomesPullRequestOnPostgres: with [store] url naming a PostgreSQL database, the store and River's
// queue live there (riverpgxv5): a run of the fake agent goes through to its pull request as River jobs that are
// worked and snoozed on PostgreSQL, nothing lands in a SQLite file, and `ace ls --json` of another ace, pointed at
// the database by ACE_STORE_URL alone, lists the run.
func TestIssueBecomesPullRequestOnPostgres(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	in := pgConfig(t, url)
	cfg, gh, exe := in.Cfg, in.GH, in.Exe
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
	if got := gittest.Run(t, in.Remote, "show", r.Branch+":GREETING.md"); got != "Hello from the fake agent!" {
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
	cfg, exe := in.Cfg, in.Exe
	const hosts = 4
	errs := make([]error, hosts)
	var wg sync.WaitGroup
	for i := range hosts {
		c := *cfg
		c.Workspace.Root = filepath.Join(t.TempDir(), "root")
		wg.Go(func() {
			svc, err := service.Open(context.Background(), service.Options{
				Config: &c, Executable: exe, Logger: slog.New(slog.DiscardHandler),
				Secrets: acetest.Secrets(map[string]string{"GITHUB_TOKEN": botToken}),
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
