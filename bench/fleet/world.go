package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/riverqueue/river"

	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/pgtest"
	"github.com/aceworks/ace/pkg/secrets"
	"github.com/aceworks/ace/pkg/service"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tracker/github/fakegithub"
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
	warnings  *warnCounter
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
	w := &world{o: o, dir: dir, exe: exe, visits: &visitLog{}, warnings: &warnCounter{}}
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
	w.log = slog.New(&countingHandler{inner: slog.NewTextHandler(w.logFile, &slog.HandlerOptions{Level: slog.LevelInfo}), c: w.warnings})

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
	if err := seedRemote(ctx, filepath.Join(dir, "seed"), seed); err != nil {
		return nil, err
	}
	for i := 1; i <= o.repos; i++ {
		name := fmt.Sprintf("bench/r%03d", i)
		remote := filepath.Join(dir, "remotes", fmt.Sprintf("r%03d.git", i))
		if err := git(ctx, "", "clone", "-q", "--bare", seed, remote); err != nil {
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
	cfg.Agents = map[string]config.AgentConfig{"fake": {
		Command: fmt.Sprintf("%s demo-agent --tick 2s --script %s", quote(w.exe), quote(w.script)),
		Env: map[string]string{"GIT_AUTHOR_NAME": "fake agent", "GIT_AUTHOR_EMAIL": "agent@ace.invalid",
			"GIT_COMMITTER_NAME": "fake agent", "GIT_COMMITTER_EMAIL": "agent@ace.invalid"},
	}}
	cfg.Tmux.Socket = fmt.Sprintf("ace-bench-fleet-%d-%s", os.Getpid(), name)
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

// seedRemote makes remote a bare repository with one commit on main.
func seedRemote(ctx context.Context, seed, remote string) error {
	if err := os.MkdirAll(seed, 0o755); err != nil {
		return err
	}
	if err := git(ctx, "", "init", "-q", "--bare", "-b", "main", remote); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(seed, "README.md"), []byte("# fleet benchmark\n"), 0o644); err != nil {
		return err
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "-A"},
		{"-c", "user.name=bench", "-c", "user.email=bench@ace.invalid", "commit", "-q", "-m", "Initial commit"},
		{"push", "-q", remote, "main"},
	} {
		if err := git(ctx, seed, args...); err != nil {
			return err
		}
	}
	return nil
}

func git(ctx context.Context, dir string, args ...string) error {
	if dir != "" {
		args = append([]string{"-C", dir}, args...)
	}
	out, err := exec.CommandContext(ctx, "git", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// quote quotes s for an agent command template (split like a shell would, never run by one).
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

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

// warnCounter counts the warnings and errors the hosts log, keeping the first few.
type warnCounter struct {
	mu    sync.Mutex
	n     int
	first []string
}

func (c *warnCounter) add(rec slog.Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	if len(c.first) < 5 {
		var b strings.Builder
		b.WriteString(rec.Level.String() + " " + rec.Message)
		rec.Attrs(func(a slog.Attr) bool {
			b.WriteString(" " + a.String())
			return true
		})
		c.first = append(c.first, b.String())
	}
}

// countingHandler logs to inner and counts what is logged at warning level or above.
type countingHandler struct {
	inner slog.Handler
	c     *warnCounter
	attrs []slog.Attr
}

func (h *countingHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn || h.inner.Enabled(ctx, l)
}

func (h *countingHandler) Handle(ctx context.Context, rec slog.Record) error {
	if rec.Level >= slog.LevelWarn {
		r := rec.Clone()
		r.AddAttrs(h.attrs...)
		h.c.add(r)
	}
	if !h.inner.Enabled(ctx, rec.Level) {
		return nil
	}
	return h.inner.Handle(ctx, rec)
}

func (h *countingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &countingHandler{inner: h.inner.WithAttrs(as), c: h.c, attrs: append(append([]slog.Attr(nil), h.attrs...), as...)}
}

func (h *countingHandler) WithGroup(name string) slog.Handler {
	return &countingHandler{inner: h.inner.WithGroup(name), c: h.c, attrs: h.attrs}
}

func printWarnings(w *world) {
	w.warnings.mu.Lock()
	defer w.warnings.mu.Unlock()
	fmt.Printf("\nhost warnings and errors logged: %d\n", w.warnings.n)
	for _, m := range w.warnings.first {
		if len(m) > 220 {
			m = m[:220] + "…"
		}
		fmt.Printf("  %s\n", m)
	}
}
