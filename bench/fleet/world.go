package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/riverqueue/river"

	"github.com/aceworks/ace/bench/internal/benchkit"
	"github.com/aceworks/ace/internal/fakegithub"
	"github.com/aceworks/ace/internal/pgtest"
	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/secrets"
	"github.com/aceworks/ace/pkg/service"
	"github.com/aceworks/ace/pkg/store"
)

const (
	botToken   = "ghs_benchFleetBotToken0123456789"
	humanToken = "ghp_benchFleetHumanToken987654321"
)

// world is one PostgreSQL, one fake GitHub with -repos repositories (each one's git remote a bare repository on
// disk), and the simulated hosts over them.
type world struct {
	o         options
	dir       string
	pg        *pgtest.Cluster
	pgVersion string
	url       string // ace's database
	stats     *statsConn
	gh        *fakegithub.Server
	ghp       *ghProxy // the hosts' way to gh, counting requests
	repos     []string
	exe       string
	script    string
	logFile   *os.File
	log       *slog.Logger
	warnings  *benchkit.WarnCounter
	hosts     []*host
	visits    *visitLog
}

// host is one simulated ace host: `ace poll` as service.Open and StartQueue make it.
type host struct {
	name string
	svc  *service.Service
	stop func() // ends its subscription to River's job events
}

func newWorld(ctx context.Context, o options) (*world, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "ace-bench-fleet-")
	if err != nil {
		return nil, err
	}
	w := &world{o: o, dir: dir, exe: exe, visits: &visitLog{}, warnings: &benchkit.WarnCounter{}}
	ok := false
	defer func() {
		if !ok {
			w.close()
		}
	}()
	if o.keep {
		fmt.Printf("benchmark directory (kept): %s\n", dir)
	}
	w.logFile, err = os.Create(filepath.Join(dir, "ace.log"))
	if err != nil {
		return nil, err
	}
	w.log = slog.New(w.warnings.Handler(slog.NewTextHandler(w.logFile, &slog.HandlerOptions{Level: slog.LevelInfo})))

	// A server as one would run it: every commit flushed to disk. pg_stat_statements counts the statements.
	w.pg, err = pgtest.Start(ctx, "fsync=on", "synchronous_commit=on", "full_page_writes=on",
		"shared_preload_libraries=pg_stat_statements", "pg_stat_statements.max=5000", "track_io_timing=on")
	if err != nil {
		return nil, err
	}
	if w.url, err = w.pg.CreateDatabase(ctx); err != nil {
		return nil, err
	}
	if w.stats, err = openStats(ctx, w.pg, w.url); err != nil {
		return nil, err
	}
	w.pgVersion = w.stats.version

	w.gh = fakegithub.Start()
	w.gh.AddUser("ace-bot", botToken)
	w.gh.AddUser("alice", humanToken)
	seed := filepath.Join(dir, "seed.git")
	if err := benchkit.SeedRemote(ctx, filepath.Join(dir, "seed"), seed, "# fleet benchmark\n"); err != nil {
		return nil, err
	}
	for i := 1; i <= o.repos; i++ {
		name := fmt.Sprintf("bench/r%03d", i)
		remote := filepath.Join(dir, "remotes", fmt.Sprintf("r%03d.git", i))
		if err := benchkit.Git(ctx, "", "clone", "-q", "--bare", seed, remote); err != nil {
			return nil, err
		}
		w.gh.AddRepo(name, fakegithub.RepoOptions{DefaultBranch: "main", CloneURL: remote})
		w.gh.SetGitDir(name, remote)
		w.gh.SetPermission(name, "alice", "write")
		w.repos = append(w.repos, name)
	}
	if w.ghp, err = newGHProxy(w.gh.URL()); err != nil {
		return nil, err
	}

	// The agent works o.work in two busy spells, printing a line every 2 s as an agent does, then commits.
	w.script = filepath.Join(dir, "agent-script.txt")
	half := (o.work / 2).String()
	script := "busy " + half + "\nsay Working on the task\nbusy " + half + "\nwrite work.txt done\\n\n" +
		"sh git add work.txt && git commit -q -m \"bench work\"\ndone Wrote work.txt.\n"
	if err := os.WriteFile(w.script, []byte(script), 0o644); err != nil {
		return nil, err
	}
	ok = true
	return w, nil
}

// config is ace.toml of host i: ace's defaults, the fake GitHub and agent, poll.interval o.poll.
func (w *world) config(i int) (*config.Config, error) {
	name := fmt.Sprintf("h%02d", i)
	cfg := config.Default()
	cfg.Store.URL = w.url
	if w.o.pool > 0 {
		cfg.Store.URL += "&pool_max_conns=" + strconv.Itoa(w.o.pool)
	}
	cfg.Host.Name = name
	cfg.Workspace.Root = filepath.Join(w.dir, "hosts", name)
	cfg.GitHub.APIURL = w.ghp.URL()
	cfg.GitHub.Repos = w.repos
	cfg.GitHub.TokenEnv = []string{"GITHUB_TOKEN"}
	cfg.Agent.Default = "fake"
	cfg.Agents = map[string]config.AgentConfig{"fake": {Override: agents.Override{
		Command: fmt.Sprintf("%s demo-agent --tick 2s --script %s", benchkit.Quote(w.exe), benchkit.Quote(w.script)),
		Env: map[string]string{"GIT_AUTHOR_NAME": "fake agent", "GIT_AUTHOR_EMAIL": "agent@ace.invalid",
			"GIT_COMMITTER_NAME": "fake agent", "GIT_COMMITTER_EMAIL": "agent@ace.invalid"},
	}}}
	cfg.Tmux.Socket = fmt.Sprintf("ace-bench-fleet-%d-%s", os.Getpid(), name)
	cfg.Sandbox.Mode = config.SandboxOff // what is measured here is the engine; bench/sandbox measures the box
	cfg.Poll.Interval = config.D(w.o.poll)
	cfg.Poll.MaxConcurrent = max((w.o.issues+w.o.hosts-1)/w.o.hosts, 1)
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("benchmark config: %w", err)
	}
	return cfg, nil
}

// addHosts starts hosts until there are n, and waits until each has written its first heartbeat.
func (w *world) addHosts(ctx context.Context, n int) error {
	env := map[string]string{"GITHUB_TOKEN": botToken}
	res := secrets.NewResolver(secrets.Options{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	for i := len(w.hosts) + 1; i <= n; i++ {
		cfg, err := w.config(i)
		if err != nil {
			return err
		}
		svc, err := service.Open(ctx, service.Options{Config: cfg, Secrets: res, Logger: w.log.With("host", cfg.Host.Name),
			Executable: w.exe, Watching: true, Dispatch: true})
		if err != nil {
			return fmt.Errorf("host %s: %w", cfg.Host.Name, err)
		}
		events, stop := svc.Queue.Visits()
		h := &host{name: cfg.Host.Name, svc: svc, stop: stop}
		w.hosts = append(w.hosts, h)
		go w.visits.collect(events)
		if err := svc.StartQueue(ctx); err != nil {
			return fmt.Errorf("host %s: %w", h.name, err)
		}
	}
	return waitUntil(ctx, fmt.Sprintf("%d hosts heartbeat", n), func() (bool, error) {
		hs, err := w.hosts[0].svc.Store.Hosts(ctx)
		return len(hs) == n, err
	})
}

// store is any host's view of the shared store.
func (w *world) store() *store.Store { return w.hosts[0].svc.Store }

// label files n issues labelled for ace, as alice, oldest first, over the repositories in turn; it returns how
// many each repository got.
func (w *world) label(n int) map[string]int {
	per := map[string]int{}
	base := time.Now().Add(-time.Hour)
	for i := range n {
		repo := w.repos[i%len(w.repos)]
		num := w.gh.AddIssue(repo, fakegithub.IssueOptions{Title: fmt.Sprintf("Bench task %d", i+1),
			Body: "Write work.txt.", Author: "alice", Created: base.Add(time.Duration(i) * time.Second)})
		w.gh.Label(repo, num, "ace", "alice")
		per[repo]++
	}
	return per
}

// prs counts the pull requests of every repository.
func (w *world) prs() int {
	n := 0
	for _, r := range w.repos {
		n += len(w.gh.PRs(r))
	}
	return n
}

// close stops every host (running steps reach a boundary), ends its tmux server and agents by PID, stops
// PostgreSQL and the fake GitHub, and removes the benchmark's directory unless -keep.
func (w *world) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, h := range w.hosts {
		wg.Go(func() {
			h.stop()
			if err := h.svc.Queue.Stop(ctx); err != nil {
				fmt.Fprintf(os.Stderr, "bench: stop host %s: %v\n", h.name, err)
			}
			if err := h.svc.Tmux.KillServer(ctx); err != nil {
				fmt.Fprintf(os.Stderr, "bench: kill the tmux server of host %s: %v\n", h.name, err)
			}
			if err := h.svc.Close(); err != nil {
				fmt.Fprintf(os.Stderr, "bench: close host %s: %v\n", h.name, err)
			}
		})
	}
	wg.Wait()
	if w.stats != nil {
		w.stats.close()
	}
	if w.pg != nil {
		if err := w.pg.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
		}
	}
	if w.ghp != nil {
		w.ghp.close()
	}
	if w.gh != nil {
		w.gh.Stop()
	}
	if w.logFile != nil {
		w.logFile.Close()
	}
	if !w.o.keep {
		os.RemoveAll(w.dir)
	}
}

// visitLog keeps River's report of every job visit of every host: when it ended, and how long the job waited
// to be fetched once due.
type visitLog struct {
	mu     sync.Mutex
	visits []visit
}

type visit struct {
	at        time.Time
	kind      string
	wait, ran time.Duration
}

func (v *visitLog) collect(events <-chan *river.Event) {
	for ev := range events {
		if ev == nil || ev.Job == nil || ev.JobStats == nil {
			continue
		}
		v.mu.Lock()
		v.visits = append(v.visits, visit{at: time.Now(), kind: ev.Job.Kind, wait: ev.JobStats.QueueWaitDuration,
			ran: ev.JobStats.RunDuration})
		v.mu.Unlock()
	}
}

// between returns how long each visit of a job of kind that ended within [from, to) waited to be fetched once
// due, and how long it ran.
func (v *visitLog) between(kind string, from, to time.Time) (waits, ran []time.Duration) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, x := range v.visits {
		if x.kind == kind && !x.at.Before(from) && x.at.Before(to) {
			waits, ran = append(waits, x.wait), append(ran, x.ran)
		}
	}
	return waits, ran
}

// waitUntil polls cond every 200 ms until it holds, fails, or ctx ends.
func waitUntil(ctx context.Context, what string, cond func() (bool, error)) error {
	for {
		ok, err := cond()
		if err != nil {
			return fmt.Errorf("waiting until %s: %w", what, err)
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting until %s: %w", what, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func printWarnings(w *world) {
	n, first := w.warnings.Snapshot()
	fmt.Printf("\nhost warnings and errors logged: %d\n", n)
	for _, m := range first {
		if len(m) > 220 {
			m = m[:220] + "…"
		}
		fmt.Printf("  %s\n", m)
	}
}
