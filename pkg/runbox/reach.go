package runbox

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/egress"
	"github.com/aceworks/ace/pkg/sandbox"
	"github.com/aceworks/ace/pkg/store"
)

// ace doctor and ace agents check ask whether each configured agent can reach what its configuration names, the
// way its runs will: from a box like theirs (the same allow list, the same forwarded ports, its proxy), or from
// this machine where they run unboxed. A TCP connection through the box's path, no model call.

// ReachCheck is what came of connecting to one endpoint an agent's configuration names.
type ReachCheck struct {
	// Dest is the endpoint (host:port); From what named it (a variable, a settings file's key, the CLI's API).
	Dest, From string
	OK         bool
	// Boxed: tried from a box as the agent's runs are.
	Boxed bool
	// Detail says what came of it; Fix what to change when it failed — a line of ace.toml, or the server to
	// start. Config: the box kept it out (its allow list, its forwarded ports), not the network.
	Detail, Fix string
	Config      bool
}

// reachDialTimeout bounds a probe from this machine (an unboxed agent's).
const reachDialTimeout = 5 * time.Second

// CheckReach connects to each endpoint agent prof's configuration names — its model's (a *_BASE_URL it gets, its
// CLI's own settings; else its CLI's API) and the MCP servers its settings name — as its runs will: boxed where
// cfg boxes them here (self is ace's executable, the box's first process), else from this machine.
func CheckReach(ctx context.Context, cfg *config.Config, prof agents.Profile, self string) ([]ReachCheck, error) {
	// The allow list needs nothing but the configuration and the root: no run, no tracker.
	sb := New(Options{Config: cfg, Root: cfg.Workspace.Root})
	targets := reachTargets(prof, sb.endpoints(prof))
	if len(targets) == 0 {
		return nil, nil
	}
	scfg := cfg.SandboxFor(prof.Name, "")
	if scfg.Mode == config.SandboxOff {
		return dialFromHere(ctx, targets), nil
	}
	host, err := sandbox.Detect(ctx)
	switch {
	case err != nil && scfg.Mode == config.SandboxOn:
		return nil, fmt.Errorf("sandbox mode %q for agent %s: %w", scfg.Mode, prof.Name, err)
	case err != nil:
		return dialFromHere(ctx, targets), nil // mode auto: its runs go unboxed here
	}
	return probeFromBox(ctx, sb, host, prof, scfg, self, targets)
}

// reachTargets are the endpoints to try, each once, with what named it: those the configuration names, and the
// CLI's API when nothing moves its model.
func reachTargets(prof agents.Profile, eps []agents.Endpoint) []allowed {
	var out []allowed
	add := func(dest, from string) {
		if dest != "" && !slices.ContainsFunc(out, func(a allowed) bool { return a.dest == dest }) {
			out = append(out, allowed{dest: dest, from: from})
		}
	}
	model := false
	for _, ep := range eps {
		add(urlDest(ep.URL), ep.From)
		model = model || ep.Model && urlDest(ep.URL) != ""
	}
	if !model && prof.ModelAPI() != "" {
		add(prof.ModelAPI(), prof.Name+"'s API")
	}
	return out
}

// dialFromHere connects to each target from this machine, as an unboxed agent would.
func dialFromHere(ctx context.Context, targets []allowed) []ReachCheck {
	out := make([]ReachCheck, len(targets))
	for i, t := range targets {
		c := ReachCheck{Dest: t.dest, From: t.from}
		d := net.Dialer{Timeout: reachDialTimeout}
		conn, err := d.DialContext(ctx, "tcp", t.dest)
		if err == nil {
			conn.Close()
			c.OK, c.Detail = true, "reached from this machine (the agent runs unboxed)"
		} else {
			c.Detail, c.Fix = err.Error(), UnreachableHint(t.dest, err.Error())
		}
		out[i] = c
	}
	return out
}

// probeFromBox connects to each target from a box like the agent's runs': its allow list (without a run's git
// remote), its forwarded ports, a proxy served here for the probe.
func probeFromBox(ctx context.Context, sb *Boxes, host *sandbox.Host, prof agents.Profile, scfg config.SandboxConfig,
	self string, targets []allowed) ([]ReachCheck, error) {
	dir, err := os.MkdirTemp("", "ace-reach-") // short: the proxy's socket path must fit a unix address
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var d [3]string
	for i, name := range []string{"wc", "home", "egress"} {
		d[i] = filepath.Join(dir, name)
		if err := os.Mkdir(d[i], 0o700); err != nil {
			return nil, err
		}
	}
	list := sb.allowed(&store.Run{}, prof, scfg)
	var ports []int
	fwd, _ := forwards(list)
	for _, f := range fwd {
		ports = append(ports, f.port)
	}
	sock := filepath.Join(d[2], "egress.sock")
	ln, err := egress.ListenUnix(sock)
	if err != nil {
		return nil, err
	}
	px, err := egress.New(egress.Options{Allow: sb.allow(&store.Run{}, prof, scfg)})
	if err != nil {
		ln.Close()
		return nil, err
	}
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- px.Serve(pctx, ln) }()
	defer func() { cancel(); <-done }()
	dests := make([]string, len(targets))
	for i, t := range targets {
		dests[i] = t.dest
	}
	res, err := host.ProbeReach(ctx, sandbox.Spec{WorkDir: d[0], Home: d[1], Self: self, ProxySocket: sock,
		Forward: ports, ProxyPort: proxyPort(ports)}, dests)
	if err != nil {
		return nil, err
	}
	out := make([]ReachCheck, 0, len(res))
	for i, r := range res {
		out = append(out, boxedCheck(r, targets[i].from))
	}
	return out, nil
}

// What would mend a destination the agent cannot reach, said from the destination and the error: the words a
// user needs next to the failure (the event, the status comment, the question on the issue, ace doctor).

// UnreachableHint says what would mend a destination the box's proxy, or a probe, could not connect to; "" when
// the error says nothing ace can help with.
func UnreachableHint(dest, err string) string {
	e := strings.ToLower(err)
	host, _, _ := net.SplitHostPort(dest)
	switch {
	case strings.Contains(e, "not on the allow list") || strings.Contains(e, "403"):
		return fmt.Sprintf("to allow it, add to ace.toml: [sandbox] allow = [%q]", dest)
	case loopbackPort(dest) != 0 && (strings.Contains(e, "refused") || strings.Contains(e, "reset")):
		return fmt.Sprintf("nothing answers on this machine's %s: is its server (your gateway, your local model) running?", dest)
	case strings.Contains(e, "no such host") || strings.Contains(e, "server misbehaving") ||
		strings.Contains(e, "lookup ") && strings.Contains(e, "network is unreachable"):
		return fmt.Sprintf("%s does not resolve on this machine: check the name, or this machine's DNS", host)
	case strings.Contains(e, "refused"):
		return fmt.Sprintf("%s refuses the connection: is its server up?", dest)
	case strings.Contains(e, "timeout") || strings.Contains(e, "unreachable") || strings.Contains(e, "no route"):
		return fmt.Sprintf("this machine cannot reach %s: check its network (ace's proxy connects from this machine, "+
			"not through another proxy)", dest)
	}
	return ""
}

// boxedCheck says what a probe from the box found, and what would mend it.
func boxedCheck(r sandbox.Reach, from string) ReachCheck {
	c := ReachCheck{Dest: r.Dest, From: from, OK: r.OK, Boxed: true}
	_, port, _ := net.SplitHostPort(r.Dest)
	switch {
	case r.OK && r.Forwarded:
		c.Detail = "reached from the box, forwarded from this machine's loopback"
	case r.OK:
		c.Detail = "reached from the box, through its proxy"
	case r.Status == 403:
		c.Detail, c.Config = "the box's proxy refuses it: not on the allow list", true
		c.Fix = fmt.Sprintf("add to ace.toml: [sandbox] allow = [%q]", r.Dest)
	case !r.Forwarded && r.Status == 0 && loopbackPort(r.Dest) != 0 && loopbackPort(r.Dest) < sandbox.MinForwardPort:
		c.Detail, c.Config = r.Error, true
		c.Fix = fmt.Sprintf("a box cannot listen below port %d: run the server on a port from %d up, or point the "+
			"agent at it by this machine's hostname", sandbox.MinForwardPort, sandbox.MinForwardPort)
	case !r.Forwarded && r.Status == 0 && loopbackPort(r.Dest) != 0:
		c.Detail, c.Config = r.Error, true
		c.Fix = "add to ace.toml: [sandbox] forward = [" + port + "]"
	default:
		c.Detail, c.Fix = r.Error, UnreachableHint(r.Dest, r.Error)
	}
	return c
}

// String is the check as ace doctor prints it.
func (c ReachCheck) String() string {
	if c.Dest == "" {
		return c.Detail
	}
	s := c.Dest
	if c.From != "" {
		s += " (" + c.From + ")"
	}
	s += ": " + c.Detail
	if c.Fix != "" {
		s += " — " + c.Fix
	}
	return s
}
