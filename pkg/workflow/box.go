package workflow

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/sandbox"
	"github.com/aceworks/ace/pkg/store"
)

// The sandbox ([sandbox], package sandbox): each agent process a runner starts runs in a box of its own, which
// sees the run's working copy and a home of its own for the run, and reaches the network only through an egress
// proxy that the ace process working the run serves (box_proxy.go). A runner asks for a plan before it prepares
// the agent's environment (a boxed agent's home is the run's, not the user's) and wraps the command once it has
// it (box_spec.go says what the box sees).

// sandboxes is the engine's part that puts agents in boxes and keeps their proxies.
type sandboxes struct {
	e     *Engine
	boxes *sandbox.Detector // whether boxes work here: Options.Boxes

	mu      sync.Mutex
	proxies map[int64]*runProxy
	closed  bool
}

// boxPlan is a boxed launch in the making: the host's bubblewrap, the run's sandbox configuration and where the
// run's box keeps its home and its proxy's socket.
type boxPlan struct {
	host *sandbox.Host
	cfg  config.SandboxConfig
	home string
	sock string
}

// plan decides whether r's agent runs boxed: a plan, or nil for the host — mode "off", or mode "auto" where
// boxes do not work here, which a warning event says once per run, with what to install. Under mode "on" a box
// that cannot be built fails the run, naming what to install.
func (sb *sandboxes) plan(ctx context.Context, r *store.Run, prof agents.Profile) (*boxPlan, error) {
	e := sb.e
	cfg := e.cfg.SandboxFor(prof.Name, r.Repo)
	if cfg.Mode == config.SandboxOff {
		if r.State.Box != nil {
			r.State.Box.Proxy = ""
		}
		return nil, nil
	}
	h, err := sb.boxes.Host(ctx)
	if err == nil && e.o.Self == "" {
		err = errors.New("ace's executable is unknown (workflow.Options.Self), so no box can start it")
	}
	if err != nil {
		if cfg.Mode == config.SandboxOn {
			return nil, Terminal(fmt.Errorf("sandbox mode %q for agent %s: %w", cfg.Mode, prof.Name, err))
		}
		box := sb.state(r)
		box.Proxy = ""
		if box.Unboxed == "" {
			box.Unboxed = err.Error()
			e.event(ctx, r, EventSandbox, fmt.Sprintf("%s runs unboxed, as you, with your files and network: %v "+
				"(sandbox mode \"auto\"; \"on\" makes this an error, \"off\" runs agents unboxed without a word)", prof.Name, err))
		}
		return nil, nil
	}
	sock, err := sb.socketPath(r.ID)
	if err != nil {
		return nil, err
	}
	return &boxPlan{host: h, cfg: cfg, home: filepath.Join(sb.runDir(r.ID), "homes", prof.Name), sock: sock}, nil
}

// wrap puts argv in the plan's box and starts the run's proxy: the box's environment is le's plain variables
// with what a box adds (box_spec.go), never its secrets, which the runner hands on as it does unboxed; terminal
// keeps the tmux pane's terminal.
func (sb *sandboxes) wrap(ctx context.Context, r *store.Run, prof agents.Profile, p *boxPlan, argv []string, le launchEnv, terminal bool, host *hosted) (*sandbox.Box, error) {
	e := sb.e
	box := sb.state(r)
	fresh := box.Proxy == ""
	box.Home, box.Proxy, box.Unboxed = p.home, p.sock, ""
	if err := sb.ensure(ctx, r); err != nil {
		return nil, err
	}
	env := boxEnv(prof, le.env, r.Workdir)
	program := argv[0]
	if host != nil {
		// ace's own program holds the agent in the box (the live host): the CLI it starts is what must be there.
		program = host.program
	}
	ro, links := sb.readOnly(r, prof, p.cfg, program, env["PATH"])
	list := sb.allowed(r, prof, p.cfg)
	fwd, below := forwards(list)
	ports := make([]int, len(fwd))
	for i, f := range fwd {
		ports[i] = f.port
	}
	spec := sandbox.Spec{
		WorkDir: r.Workdir, Home: p.home, Env: env, ProxySocket: p.sock, ReportSocket: reportSocket(p.sock),
		Forward: ports, ProxyPort: proxyPort(ports), Terminal: terminal, Lookups: prof.BoxLookups(),
		Self: e.o.Self, ReadOnly: ro, Links: links, ReadWrite: le.logins, Hide: sb.hidden(),
	}
	if host != nil {
		spec.ReadWrite = append(spec.ReadWrite, host.readWrite...)
	}
	e.log.DebugContext(ctx, "box", "run", r.ID, "read_only", spec.ReadOnly, "links", spec.Links, "read_write", spec.ReadWrite, "forward", spec.Forward)
	b, err := p.host.Wrap(spec, argv)
	if err != nil {
		return nil, fmt.Errorf("put %s in its box: %w", prof.Name, err)
	}
	if fresh {
		e.event(ctx, r, EventSandbox, fmt.Sprintf("%s runs boxed: it sees its working copy and its home for this run (%s), "+
			"not your home or ace's; its network goes through ace's proxy (%d destinations allowed)",
			prof.Name, p.home, len(sb.allow(r, prof, p.cfg))))
		if len(fwd) > 0 {
			e.event(ctx, r, EventSandbox, forwardMessage(fwd))
		}
		for _, f := range below {
			e.event(ctx, r, EventSandbox, belowMessage(f))
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
func (sb *sandboxes) state(r *store.Run) *store.BoxState {
	if r.State.Box == nil {
		r.State.Box = &store.BoxState{}
	}
	return r.State.Box
}

// agentCommand is how a runner starts the agent: argv with env and, apart, secrets. Boxed, argv is the box's
// and env its whole environment (nothing of ace's is added to it); unboxed, env is added to what the runner has.
type agentCommand struct {
	argv         []string
	env, secrets map[string]string
	boxed        bool
}

// hosted is a program of ace's own that holds the agent in its box (the live host, `ace __live`): program is the
// agent's CLI, which it starts; readWrite what it writes (its spec, socket and transcript); inBox its argv with
// ace's executable as the box has it.
type hosted struct {
	program   string
	readWrite []string
	inBox     []string
}

// command is the agent's command argv with its environment, in a box when the run's sandbox says so (terminal:
// for a tmux pane).
func (sb *sandboxes) command(ctx context.Context, r *store.Run, prof agents.Profile, vars agents.Vars, argv []string, terminal bool) (agentCommand, error) {
	return sb.commandOf(ctx, r, prof, vars, argv, terminal, nil)
}

// commandOf is command, for a program of ace's that hosts the agent when host is set (argv: its argv outside
// a box).
func (sb *sandboxes) commandOf(ctx context.Context, r *store.Run, prof agents.Profile, vars agents.Vars, argv []string, terminal bool, host *hosted) (agentCommand, error) {
	e := sb.e
	p, err := sb.plan(ctx, r, prof)
	if err != nil {
		return agentCommand{}, err
	}
	home := ""
	if p != nil {
		home = p.home
	}
	le, err := e.agent.agentEnv(ctx, r, prof, vars, home)
	if err != nil {
		return agentCommand{}, err
	}
	if p == nil {
		return agentCommand{argv: argv, env: le.env, secrets: le.secrets}, nil
	}
	inBox := prof.BoxArgv(argv)
	if host != nil {
		inBox = host.inBox
	}
	b, err := sb.wrap(ctx, r, prof, p, inBox, le, terminal, host)
	if err != nil {
		return agentCommand{}, err
	}
	return agentCommand{argv: b.Argv, env: b.Env, secrets: le.secrets, boxed: true}, nil
}
