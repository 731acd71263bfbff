package runbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/sandbox"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tracker"
)

// The kinds of the events a run's box records.
const (
	EventSandbox = "sandbox" // the agent was started boxed, or unboxed and why (box.go)
	EventEgress  = "egress"  // the box's proxy refused a connection, or let a destination out (proxy.go)
	// EventBoxFile: the box kept the agent from a path — hidden, a write outside its own, another process's /proc
	// entry — or cannot record such attempts (files.go).
	EventBoxFile = "box-file"
)

// ErrNoBox is why a run cannot have the box its configuration asks for: sandbox mode "on" where boxes do not
// work, an allow list the proxy refuses. Trying again finds it the same: the run fails.
var ErrNoBox = errors.New("no box for the run")

// noBox is err, which is ErrNoBox too: its words stay err's.
type noBox struct{ err error }

func (n *noBox) Error() string        { return n.err.Error() }
func (n *noBox) Unwrap() error        { return n.err }
func (n *noBox) Is(target error) bool { return target == ErrNoBox }

// Events records an event of a run as its step does (the engine's, which tells the run's watchers too).
type Events func(ctx context.Context, r *store.Run, kind, msg string)

// EventStore keeps the events a run's proxy records from its own goroutines, outside any step.
type EventStore interface {
	AppendEvent(ctx context.Context, id int64, ev store.Event) error
}

// Tracker lends the endpoints a boxed agent may reach of it (its API).
type Tracker interface {
	Endpoints() []tracker.Endpoint
}

// Mirrors says where a repository's working copies borrow objects from (the workspace manager).
type Mirrors interface {
	MirrorObjects(repo string) (string, error)
}

// Options are what Boxes uses. Config and Root are required; the rest may be left out where a caller has none
// (CheckReach: no run, no tracker, no store).
type Options struct {
	Config *config.Config // [sandbox], by agent and repository; the secrets file a box must not see
	Root   string         // ace's root: where the boxes keep their homes and sockets, which a box never sees
	Self   string         // ace's executable, the box's first process ("": no box can start)
	// Detector says whether boxes work here (sandbox.NewDetector when nil).
	Detector *sandbox.Detector
	Events   Events     // a run's events from its step
	Store    EventStore // the proxies' events
	Tracker  Tracker
	Mirrors  Mirrors
	// Profile is the run's agent as its runs start it (its model chosen for the run).
	Profile func(r *store.Run) (agents.Profile, error)
	Logger  *slog.Logger
}

// Boxes puts agents in boxes and keeps their proxies, for the runs this process works.
type Boxes struct {
	o Options

	mu      sync.Mutex
	proxies map[int64]*runProxy
	closed  bool
}

// New returns the boxes of o.
func New(o Options) *Boxes {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Detector == nil {
		o.Detector = sandbox.NewDetector()
	}
	return &Boxes{o: o}
}

// Plan is a boxed launch in the making: the host's bubblewrap, the run's sandbox configuration and where the
// run's box keeps its home and its proxy's socket.
type Plan struct {
	Home string // the agent's home for the run, made by whoever prepares it
	host *sandbox.Host
	cfg  config.SandboxConfig
	sock string
}

// Plan decides whether r's agent runs boxed: a plan, or nil for the host — mode "off", or mode "auto" where
// boxes do not work here, which a warning event says once per run, with what to install. Under mode "on" a box
// that cannot be built fails the run (ErrNoBox), naming what to install.
func (sb *Boxes) Plan(ctx context.Context, r *store.Run, prof agents.Profile) (*Plan, error) {
	cfg := sb.o.Config.SandboxFor(prof.Name, r.Repo)
	if cfg.Mode == config.SandboxOff {
		if r.State.Box != nil {
			r.State.Box.Proxy = ""
		}
		return nil, nil
	}
	h, err := sb.o.Detector.Host(ctx)
	if err == nil && sb.o.Self == "" {
		err = errors.New("ace's executable is unknown (workflow.Options.Self), so no box can start it")
	}
	if err != nil {
		if cfg.Mode == config.SandboxOn {
			return nil, &noBox{fmt.Errorf("sandbox mode %q for agent %s: %w", cfg.Mode, prof.Name, err)}
		}
		box := state(r)
		box.Proxy = ""
		if box.Unboxed == "" {
			box.Unboxed = err.Error()
			sb.o.Events(ctx, r, EventSandbox, fmt.Sprintf("%s runs unboxed, as you, with your files and network: %v "+
				"(sandbox mode \"auto\"; \"on\" makes this an error, \"off\" runs agents unboxed without a word)", prof.Name, err))
		}
		return nil, nil
	}
	sock, err := sb.socketPath(r.ID)
	if err != nil {
		return nil, err
	}
	return &Plan{host: h, cfg: cfg, Home: filepath.Join(sb.runDir(r.ID), "homes", prof.Name), sock: sock}, nil
}

// Launch is what a runner starts in a box.
type Launch struct {
	Argv []string          // as the box runs it
	Env  map[string]string // the agent's plain variables, never its secrets, which the runner hands on as it does unboxed
	// ReadWrite are the host paths it writes besides its working copy and its home: the CLI's logins, the files
	// of a program of ace's that holds the agent in the box (the live host).
	ReadWrite []string
	// Program is the agent's CLI when Argv starts a program of ace's that holds it (the live host, a setup
	// command's shell): what must be there. "": Argv[0].
	Program  string
	Terminal bool // keep the tmux pane's terminal
}

// Wrap puts l in the plan's box and starts the run's proxy: the box's environment is l's variables with what a
// box adds (spec.go).
func (sb *Boxes) Wrap(ctx context.Context, r *store.Run, prof agents.Profile, p *Plan, l Launch) (*sandbox.Box, error) {
	box := state(r)
	fresh := box.Proxy == ""
	box.Home, box.Proxy, box.Unboxed = p.Home, p.sock, ""
	if err := sb.Ensure(ctx, r); err != nil {
		return nil, err
	}
	env := boxEnv(prof, l.Env, r.Workdir)
	program := l.Program
	if program == "" {
		program = l.Argv[0]
	}
	ro, links := sb.readOnly(r, prof, p.cfg, program, env["PATH"])
	list := sb.allowed(r, prof, p.cfg)
	fwd, below := forwards(list)
	ports := make([]int, len(fwd))
	for i, f := range fwd {
		ports[i] = f.port
	}
	spec := sandbox.Spec{
		WorkDir: r.Workdir, Home: p.Home, Env: env, ProxySocket: p.sock, ReportSocket: ReportSocket(p.sock),
		Forward: ports, ProxyPort: proxyPort(ports), Terminal: l.Terminal, Lookups: prof.BoxLookups(),
		Self: sb.o.Self, ReadOnly: ro, Links: links, ReadWrite: l.ReadWrite, Hide: sb.hidden(),
	}
	sb.o.Logger.DebugContext(ctx, "box", "run", r.ID, "read_only", spec.ReadOnly, "links", spec.Links, "read_write", spec.ReadWrite, "forward", spec.Forward)
	b, err := p.host.Wrap(spec, l.Argv)
	if err != nil {
		return nil, fmt.Errorf("put %s in its box: %w", prof.Name, err)
	}
	if fresh {
		sb.o.Events(ctx, r, EventSandbox, fmt.Sprintf("%s runs boxed: it sees its working copy and its home for this run (%s), "+
			"not your home or ace's; its network goes through ace's proxy (%d destinations allowed)",
			prof.Name, p.Home, len(sb.allow(r, prof, p.cfg))))
		if len(fwd) > 0 {
			sb.o.Events(ctx, r, EventSandbox, forwardMessage(fwd))
		}
		for _, f := range below {
			sb.o.Events(ctx, r, EventSandbox, belowMessage(f))
		}
	}
	return b, nil
}

// forwardMessage says which of this machine's loopback ports a box reaches, and what named each.
func forwardMessage(fwd []forwarded) string {
	parts := make([]string, len(fwd))
	for i, f := range fwd {
		parts[i] = fmt.Sprintf("127.0.0.1:%d (%s)", f.port, f.from)
	}
	return "forwarded into the box from this machine's loopback, each at the same port of the box's own (through " +
		"ace's proxy, which records it): " + strings.Join(parts, ", ")
}

// belowMessage says that a loopback port below 1024 the configuration names cannot be forwarded, and what to do.
func belowMessage(f forwarded) string {
	return fmt.Sprintf("this machine's 127.0.0.1:%d (%s) is not forwarded into the box: a box cannot listen on a port "+
		"below %d; run the server on a port from %d up, or point the agent at it by this machine's hostname (the "+
		"proxy reaches it; allow it with [sandbox] allow)", f.port, f.from, sandbox.MinForwardPort, sandbox.MinForwardPort)
}

// proxyPort is the port of the box's proxy forwarder: sandbox.DefaultProxyPort, or the next one that no
// forwarded port takes.
func proxyPort(forwarded []int) int {
	p := sandbox.DefaultProxyPort
	for slices.Contains(forwarded, p) {
		p++
	}
	return p
}

// state is the run's BoxState, made when it has none.
func state(r *store.Run) *store.BoxState {
	if r.State.Box == nil {
		r.State.Box = &store.BoxState{}
	}
	return r.State.Box
}
