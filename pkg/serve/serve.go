// Package serve is ace over HTTP: a JSON API (v1), Server-Sent Events of run events, a live dashboard, GitHub
// webhooks that wake the job queue, and Prometheus metrics. It reads runs from the store, acts on them through
// the engine (the same calls as ace stop, send and nudge) and never changes a run itself.
package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/eval"
	"github.com/aceworks/ace/pkg/secrets"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// Engine is what the server asks of the workflow engine.
type Engine interface {
	Subscribe(buffer int) (<-chan workflow.Progress, func())
	Stop(ctx context.Context, r *store.Run, reason string) error
	Send(ctx context.Context, r *store.Run, text string) error
	Nudge(ctx context.Context, r *store.Run) error
	Screen(ctx context.Context, r *store.Run, historyLines int) (string, error)
}

// Store is what the server reads of the state store.
type Store interface {
	ListRuns(ctx context.Context, f store.Filter) ([]*store.Run, error)
	GetRun(ctx context.Context, id int64) (*store.Run, error)
	Events(ctx context.Context, runID int64) ([]store.Event, error)
	Hosts(ctx context.Context) ([]store.Host, error)
	Slots(ctx context.Context) (map[string]store.SlotCounts, error)
	Queue(ctx context.Context) ([]store.Queued, error)
}

// Queue is what webhooks do: start runs for labelled issues now, or make a run look at its issue now.
type Queue interface {
	Dispatch(ctx context.Context) error
	Wake(ctx context.Context, repo string, issue int) error
}

var (
	_ Engine = (*workflow.Engine)(nil)
	_ Store  = (*store.Store)(nil)
)

// Options configure a Server.
type Options struct {
	Store  Store
	Engine Engine
	Queue  Queue
	// Root is workspace.root: the transcripts of tmux runs are under its logs/, this host's evals under its eval/.
	Root string
	// SharedEvals is a fleet's store (on PostgreSQL), where its hosts keep the evals they share; nil on one host.
	SharedEvals eval.SharedEvals
	// Addr is where the server listens: any address but a loopback one requires Token.
	Addr string
	// Token, when set, is required of every request but /healthz and the webhook (a Bearer header, or the
	// dashboard's cookie).
	Token string
	// WebhookSecret verifies GitHub's X-Hub-Signature-256; "" refuses webhooks.
	WebhookSecret string
	// TriggerLabel is the label whose application starts a run (trigger.label).
	TriggerLabel string
	// MaxBody bounds request bodies (default 1 MiB).
	MaxBody int64
	// Redactor masks secret values in every response.
	Redactor *secrets.Redactor
	Logger   *slog.Logger
	// Host names this machine in run listings; default the hostname.
	Host string
	// StorePoll is how often the server looks for run changes made by other ace processes (default 1s).
	StorePoll time.Duration
	// ActionTimeout bounds stop, send and nudge (default 2m).
	ActionTimeout time.Duration
	// DeadAfter is host.dead_after: a host silent that long is shown dead (default 30s).
	DeadAfter time.Duration
}

// Server is ace's HTTP server.
type Server struct {
	o          Options
	log        *slog.Logger
	mux        *http.ServeMux
	hub        *hub
	reg        *prometheus.Registry
	metrics    *metrics
	deliveries *recent
}

// New checks the options and builds the server.
func New(o Options) (*Server, error) {
	if o.Store == nil || o.Engine == nil || o.Queue == nil {
		return nil, errors.New("serve: incomplete options")
	}
	if o.Addr != "" && !config.IsLoopback(o.Addr) && o.Token == "" {
		return nil, fmt.Errorf("serve: %s is not a loopback address: set serve.token_env to the variable holding an API token", o.Addr)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Redactor == nil {
		o.Redactor = secrets.NewRedactor()
	}
	o.Redactor.Add(o.Token, o.WebhookSecret)
	if o.MaxBody <= 0 {
		o.MaxBody = 1 << 20
	}
	if o.Host == "" {
		o.Host, _ = os.Hostname()
	}
	if o.StorePoll <= 0 {
		o.StorePoll = time.Second
	}
	if o.DeadAfter <= 0 {
		o.DeadAfter = 30 * time.Second
	}
	if o.ActionTimeout <= 0 {
		o.ActionTimeout = 2 * time.Minute
	}
	s := &Server{o: o, log: o.Logger, reg: prometheus.NewRegistry(), deliveries: newRecent(4096)}
	s.metrics = newMetrics(s.reg, o.Store, o.DeadAfter)
	s.hub = newHub(s)
	s.routes()
	return s, nil
}

// Handler is the server's HTTP handler. Live updates (SSE, metrics from events) flow only while Run works.
func (s *Server) Handler() http.Handler { return s.secure(s.mux) }

// Run works the live side of the server (engine events, run changes of other processes) until ctx ends.
func (s *Server) Run(ctx context.Context) { s.hub.run(ctx) }

// ListenAndServe listens on addr and serves until ctx ends, then shuts down (open event streams are closed).
// ready, when not nil, receives the address actually listened on.
func (s *Server) ListenAndServe(ctx context.Context, addr string, ready func(net.Addr)) error {
	if !config.IsLoopback(addr) && s.o.Token == "" {
		return fmt.Errorf("serve: %s is not a loopback address: set serve.token_env to the variable holding an API token", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	if ready != nil {
		ready(ln.Addr())
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx)
	}()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err = <-errc:
	case <-ctx.Done():
		sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		err = srv.Shutdown(sctx)
		scancel()
	}
	cancel()
	<-done
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
