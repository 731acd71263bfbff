package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/aceworks/ace/bench/internal/benchkit"
	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/atomicfile"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/secrets"
	"github.com/aceworks/ace/pkg/service"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tmuxops"
	"github.com/aceworks/ace/pkg/tracker/local"
)

// repo is the repository every world tracks.
const repo = "bench/engine"

// stuckAgent is the agent an issue labelled ace:agent:stuck gets: it never leaves its splash screen, so it never
// shows the ready marker, as a CLI stuck at an unknown screen would not.
const stuckAgent = "stuck"

// worldOptions shape one ace installation of the benchmark.
type worldOptions struct {
	maxConcurrent int
	// script is what the healthy agent does with its prompt (fakeagent's script format).
	script string
	// splash is how long the healthy agent discards input after it starts (0 = none).
	splash time.Duration
	// keepalive holds an idle session in the tmux server, so that it never exits between agents.
	keepalive bool
}

// world is an ace installation of its own: a bare git remote, a local tracker, a store and a River queue on it,
// a private tmux server, and this process as `ace poll` (dispatch on).
type world struct {
	dir        string
	trackerDir string
	svc        *service.Service
	rec        *recorder
	warnings   *benchkit.WarnCounter
	logFile    *os.File
}

// newWorld sets up a world under dir and starts its queue: from then on the engine dispatches every labelled
// issue by itself, every poll.interval.
func newWorld(ctx context.Context, dir, exe string, o worldOptions) (*world, error) {
	w := &world{dir: dir, trackerDir: filepath.Join(dir, "tracker")}
	for _, d := range []string{"seed", "root", filepath.Join("tracker", "issues")} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	remote := filepath.Join(dir, "remote.git")
	if err := benchkit.SeedRemote(ctx, filepath.Join(dir, "seed"), remote, "# engine benchmark\n"); err != nil {
		return nil, err
	}
	repoTOML := fmt.Sprintf("name = %s\nremote = %s\ndefault_branch = \"main\"\n", strconv.Quote(repo), strconv.Quote(remote))
	if err := os.WriteFile(filepath.Join(w.trackerDir, "repo.toml"), []byte(repoTOML), 0o644); err != nil {
		return nil, err
	}
	script := filepath.Join(dir, "agent-script.txt")
	if err := os.WriteFile(script, []byte(o.script), 0o644); err != nil {
		return nil, err
	}
	cfg, err := worldConfig(dir, exe, script, o)
	if err != nil {
		return nil, err
	}
	lt, err := local.New(w.trackerDir)
	if err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(dir, "ace.log"))
	if err != nil {
		return nil, err
	}
	w.logFile = logFile
	w.warnings = &benchkit.WarnCounter{}
	log := slog.New(w.warnings.Handler(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelInfo})))
	w.rec = newRecorder()
	w.svc, err = service.Open(ctx, service.Options{
		Config:     cfg,
		Secrets:    secrets.NewResolver(secrets.Options{LookupEnv: func(string) (string, bool) { return "", false }}),
		Logger:     log,
		Executable: exe,
		Tracker:    &listTracker{Tracker: lt, rec: w.rec},
		Observer:   w.rec.observe,
		Watching:   true,
		Dispatch:   true,
	})
	if err != nil {
		logFile.Close()
		return nil, err
	}
	if o.keepalive {
		spec := tmuxops.SessionSpec{Name: "bench-keepalive", Dir: dir, Argv: []string{"sleep", "86400"}}
		if err := w.svc.Tmux.NewSession(ctx, spec); err != nil {
			w.close()
			return nil, fmt.Errorf("keepalive session: %w", err)
		}
	}
	if err := w.svc.StartQueue(ctx); err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

// worldConfig is ace.toml of a world: intervals short for a benchmark, the healthy fake agent as the default
// and the stuck one for issues that ask for it.
func worldConfig(dir, exe, script string, o worldOptions) (*config.Config, error) {
	cfg := config.Default()
	cfg.Workspace.Root = filepath.Join(dir, "root")
	cfg.Tracker = config.TrackerConfig{Kind: "local", Path: filepath.Join(dir, "tracker")}
	gitEnv := map[string]string{"GIT_AUTHOR_NAME": "fake agent", "GIT_AUTHOR_EMAIL": "agent@ace.invalid",
		"GIT_COMMITTER_NAME": "fake agent", "GIT_COMMITTER_EMAIL": "agent@ace.invalid"}
	healthy := benchkit.Quote(exe) + " demo-agent --script " + benchkit.Quote(script)
	if o.splash > 0 {
		healthy += " --splash " + o.splash.String()
	}
	cfg.Agent.Default = "fake"
	cfg.Agents = map[string]config.AgentConfig{
		"fake": {Override: agents.Override{Command: healthy, Env: gitEnv}},
		stuckAgent: {Override: agents.Override{Command: benchkit.Quote(exe) + " demo-agent --splash 24h", Env: gitEnv,
			Markers: agents.MarkerOverride{Ready: `\? for shortcuts`, Busy: `esc to interrupt`}}},
	}
	cfg.Tmux.Socket = fmt.Sprintf("ace-bench-engine-%d-%s", os.Getpid(), filepath.Base(dir))
	cfg.Sandbox.Mode = config.SandboxOff // what is measured here is the engine; bench/sandbox measures the box
	cfg.Tmux.StartupTimeout = config.D(60 * time.Second)
	cfg.Tmux.EnterDelay = config.D(150 * time.Millisecond)
	cfg.Monitor.Interval = config.D(200 * time.Millisecond)
	cfg.Monitor.Timeout = config.D(10 * time.Minute)
	cfg.Poll.Interval = config.D(200 * time.Millisecond)
	cfg.Poll.MaxConcurrent = o.maxConcurrent
	cfg.PR.Draft = false
	cfg.PR.Follow = false // a run ends when its pull request opens: the benchmark measures the loop up to there
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("benchmark config: %w", err)
	}
	return cfg, nil
}

// issue is one labelled issue to file.
type issue struct {
	number int
	stuck  bool
}

// label files issues, each carrying the trigger label (and the stuck agent's, if so), created in the order of
// their numbers (dispatch takes the oldest first). It returns when the last file is in place.
func (w *world) label(issues []issue) (time.Time, error) {
	epoch := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, is := range issues {
		labels := `"ace"`
		if is.stuck {
			labels += `, "ace:agent:` + stuckAgent + `"`
		}
		body := fmt.Sprintf("+++\ntitle = \"bench issue %d\"\nlabels = [%s]\nstate = \"open\"\nauthor = \"you\"\n"+
			"labeled_by = \"you\"\ncreated = %s\n+++\nAdd the file work-%d.txt.\n",
			is.number, labels, epoch.Add(time.Duration(is.number)*time.Second).Format(time.RFC3339), is.number)
		path := filepath.Join(w.trackerDir, "issues", strconv.Itoa(is.number)+".md")
		if err := atomicfile.Write(path, []byte(body), 0o644); err != nil {
			return time.Time{}, err
		}
	}
	return time.Now(), nil
}

// runs lists every run of the world, oldest first.
func (w *world) runs(ctx context.Context) ([]*store.Run, error) {
	return w.svc.Store.ListRuns(ctx, store.Filter{})
}

// waitIdle waits until no run is unfinished.
func (w *world) waitIdle(ctx context.Context) error {
	for {
		n, err := w.svc.Store.CountActive(ctx)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d runs still unfinished: %w", n, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// close stops the queue (running steps reach a boundary), ends the world's tmux server and every agent in it by
// PID, and closes the store.
func (w *world) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.svc.Queue.Stop(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "bench: stop the queue:", err)
	}
	if err := w.svc.Tmux.KillServer(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "bench: kill the tmux server:", err)
	}
	if err := w.svc.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "bench: close:", err)
	}
	w.logFile.Close()
}
