// Package service wires ace's parts together from a configuration: the store, the tracker, working copies,
// tmux, secrets and agent profiles, behind one workflow engine. Every command that touches runs (run, poll, ls,
// stop, demo …) opens a Service, so they all see the same world.
package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/memory"
	"github.com/aceworks/ace/pkg/queue"
	"github.com/aceworks/ace/pkg/sandbox"
	"github.com/aceworks/ace/pkg/secrets"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tmuxops"
	"github.com/aceworks/ace/pkg/workflow"
	"github.com/aceworks/ace/pkg/workspace"
	"github.com/aceworks/ace/scripts"
)

// Options are what a Service needs besides the configuration.
type Options struct {
	Config  *config.Config
	Secrets *secrets.Resolver
	Logger  *slog.Logger
	// Executable is the ace binary that tmux panes run as the secret-injecting launcher; default os.Executable().
	Executable string
	// Observer receives the engine's progress (the foreground display of `ace run` and `ace demo`).
	Observer func(workflow.Progress)
	// Tracker replaces the tracker built from the configuration (tests; ace eval run's recorder).
	Tracker Tracker
	// Workspaces replaces the engine's working copies, the manager under workspace.root (ace eval run's, made
	// from each task's past alone).
	Workspaces workflow.Workspaces
	// Watching says the process will watch agents for long (ace run, ace poll): tmux is then read through one
	// persistent control-mode connection instead of a tmux process per look.
	Watching bool
	// Tune adjusts the engine's options before it is built (tests shorten intervals this way).
	Tune func(*workflow.Options)
	// Dispatch makes this process start runs for labelled issues once its queue is started (ace poll).
	Dispatch bool
	// Now is the one clock of the engine and the store; default time.Now.
	Now func() time.Time
	// Boxes says whether boxes work on this machine; default a new detector, which finds out at first use (a few
	// bubblewrap runs). A process that opens many services (tests) shares one.
	Boxes *sandbox.Detector
}

var _ workflow.Memory = (*memory.Store)(nil)

// Service is ace assembled: one engine and the parts behind it, for commands to share.
type Service struct {
	Config     *config.Config
	Root       string
	Store      *store.Store
	Tracker    Tracker
	Tmux       *tmuxops.Client
	Workspaces *workspace.Manager
	Engine     *workflow.Engine
	// Queue advances runs as River jobs. Commands that work runs start it (StartQueue); the others only enqueue,
	// wake or cancel jobs through it.
	Queue  *queue.Queue
	Logger *slog.Logger

	profilesMu sync.Mutex
	profiles   map[string]agents.Profile

	// stopSweep ends the sweep of runtime files that StartQueue starts; swept is closed when it has ended.
	stopSweep context.CancelFunc
	swept     chan struct{}
}

// Open assembles a Service. The store is created under workspace.root when missing.
func Open(ctx context.Context, o Options) (*Service, error) {
	cfg := o.Config
	if cfg == nil {
		return nil, errors.New("service: no configuration")
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	root := cfg.Workspace.Root
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("create workspace root %s: %w", root, err)
	}
	exe := o.Executable
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("find the ace binary (tmux panes run it to start agents): %w", err)
		}
	}
	res := o.Secrets
	if res == nil {
		res = secrets.NewResolver(secrets.Options{})
	}
	trk := o.Tracker
	if trk == nil {
		var err error
		if trk, err = NewTracker(ctx, cfg, res, log); err != nil {
			return nil, err
		}
	}
	tmuxops.SweepRuntime(filepath.Join(root, "run"))
	if _, err := scripts.Install(filepath.Join(root, "bin")); err != nil {
		return nil, fmt.Errorf("install helper scripts: %w", err)
	}
	st, err := store.OpenConfigured(ctx, cfg.Store.URL, filepath.Join(root, "ace.db"), store.WithClock(o.Now))
	if err != nil {
		return nil, fmt.Errorf("open the state store: %w", err)
	}
	boxes := o.Boxes // one answer for the agents' boxes and the boxes git runs in on working copies
	if boxes == nil {
		boxes = sandbox.NewDetector()
	}
	ws, err := workspace.New(workspace.Options{
		Root: root, AuthorName: cfg.Git.AuthorName, AuthorEmail: cfg.Git.AuthorEmail, Logger: log,
		Boxes: boxes, GitTimeout: cfg.Workspace.GitTimeout.Duration, Auth: trk,
	})
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("workspaces: %w", err)
	}
	s := &Service{Config: cfg, Root: root, Store: st, Tracker: trk, Workspaces: ws, Logger: log}
	topts := []tmuxops.Option{tmuxops.WithRecovered(s.tmuxRecovered)}
	if o.Watching {
		topts = append(topts, tmuxops.WithControl())
	}
	tmux := tmuxops.New(cfg.Tmux.Socket, topts...)
	s.Tmux = tmux
	eo := workflow.Options{
		Config:     cfg,
		Store:      st,
		Tracker:    trk,
		Workspaces: ws,
		Sessions:   tmux,
		Secrets:    res,
		Profile:    s.Profile,
		Launcher:   []string{exe, "__launch"},
		Supervisor: []string{exe, "__headless"},
		LiveHost:   []string{exe, "__live"},
		Self:       exe,
		Boxes:      boxes,
		Root:       root,
		Logger:     log,
		Observer:   o.Observer,
		Now:        o.Now,
	}
	if o.Workspaces != nil {
		eo.Workspaces = o.Workspaces
	}
	eo.ChooseAgent = s.chooseAgent
	if cfg.Memory.Enabled {
		mem, err := memory.New(root, memory.Options{AgentsMax: cfg.Memory.AgentsMaxBytes, StatusMax: cfg.Memory.StatusMaxBytes})
		if err != nil {
			st.Close()
			return nil, fmt.Errorf("repository memory: %w", err)
		}
		eo.Memory = mem
	}
	if o.Tune != nil {
		o.Tune(&eo)
	}
	eng, err := workflow.New(eo)
	if err != nil {
		st.Close()
		return nil, err
	}
	s.Engine = eng
	q, err := newQueue(ctx, st, eng, queue.Options{
		Store:         st,
		Config:        cfg,
		Now:           o.Now,
		Workers:       cfg.Poll.MaxConcurrent,
		Dispatch:      o.Dispatch,
		Interval:      cfg.Poll.Interval.Duration,
		Repos:         s.Repos,
		MaxConcurrent: cfg.Poll.MaxConcurrent,
		// A due job waits at most one monitor.interval to be fetched. The fetch is a query even when nothing is
		// due (SQLite has no notifications), so it is no more frequent than that.
		FetchPoll: min(max(cfg.Monitor.Interval.Duration, 50*time.Millisecond), time.Second),
		Logger:    log,
	})
	if err != nil {
		st.Close()
		return nil, err
	}
	s.Queue = q
	return s, nil
}

// newQueue builds the job queue in the store's own database, with River's driver for it.
func newQueue(ctx context.Context, st *store.Store, eng *workflow.Engine, o queue.Options) (*queue.Queue, error) {
	switch st.Kind() {
	case store.PostgreSQL:
		return queue.New(ctx, eng, riverpgxv5.New(st.Pool()), o)
	case store.SQLite:
		return queue.New(ctx, eng, riversqlite.New(st.DB()), o)
	}
	return nil, fmt.Errorf("job queue: no driver for a store in %s", st.Kind())
}

// StartQueue makes this process work runs: its host's run jobs, and dispatch when opened with Dispatch. First
// what dead ace processes left on the tmux server is ended (their control clients and sessions, a server they
// left unusable), then the proxies of the host's boxed runs are served: their agents may be working already.
// Runtime files of starts that did not happen are swept while the queue works (sweepRuntime).
func (s *Service) StartQueue(ctx context.Context) error {
	if _, err := s.Tmux.Recover(ctx); err != nil {
		s.Logger.WarnContext(ctx, "end what dead ace processes left on the tmux server", "err", err)
	}
	if err := s.Engine.StartProxies(ctx); err != nil {
		s.Logger.WarnContext(ctx, "serve the egress proxies of boxed runs", "err", err)
	}
	if err := s.Queue.Start(ctx); err != nil {
		return err
	}
	if s.stopSweep == nil {
		sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		s.stopSweep, s.swept = cancel, make(chan struct{})
		go s.sweepRuntime(sctx)
	}
	return nil
}

// sweepRuntime removes the runtime files no start will read (env files with an agent's secrets above all): at
// once, again when one that was still waiting for its program may have become such a file, and every
// sweepEvery besides.
func (s *Service) sweepRuntime(ctx context.Context) {
	defer close(s.swept)
	dir := filepath.Join(s.Root, "run")
	for {
		removed, recheck := tmuxops.SweepRuntime(dir)
		for _, l := range removed {
			s.Logger.InfoContext(ctx, "removed a runtime file of a start that did not happen", "file", l.Path, "why", l.Why)
		}
		if recheck <= 0 || recheck > sweepEvery {
			recheck = sweepEvery
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(recheck):
		}
	}
}

// sweepEvery is how often runtime files are swept when none is waiting for its program.
const sweepEvery = time.Minute

// tmuxRecovered hands what the tmux client ended of dead aces' to the engine, which records it.
func (s *Service) tmuxRecovered(rec tmuxops.Recovery) {
	if s.Engine != nil {
		s.Engine.TmuxRecovered(rec)
	}
}

// Close stops working jobs (running visits reach a step boundary first), then releases the store and the tmux
// connection. Agents keep running in tmux.
func (s *Service) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := s.Queue.Stop(ctx)
	if s.stopSweep != nil {
		s.stopSweep()
		<-s.swept
	}
	s.Engine.Close()
	return errors.Join(err, s.Tmux.Close(), s.Store.Close())
}
