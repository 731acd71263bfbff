package runbox

import (
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/sandbox"
	"github.com/aceworks/ace/pkg/store"
)

// What a box sees of the host and the network, decided from the run, its agent and [sandbox].

// passedEnv are the variables of ace's own environment a box gets, which an agent started on the host would
// inherit: where programs are, the locale and time zone, who the user is, CA bundles, and any *_BASE_URL (a
// gateway a CLI is pointed at, whose host the proxy then allows). Everything else of ace's — its tokens above
// all — stays out; an agent needs its configured env and secrets.
var passedEnv = []string{"PATH", "LANG", "LANGUAGE", "TZ", "USER", "LOGNAME", "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR"}

func passed(k string) bool {
	return slices.Contains(passedEnv, k) || strings.HasPrefix(k, "LC_") || strings.HasSuffix(k, "_BASE_URL")
}

// boxEnv is a boxed agent's environment without its secrets: what passes from ace's, the git identity git finds
// for the working copy (the box cannot read the user's ~/.gitconfig), the CLI's box variables, and the agent's
// own, which win.
func boxEnv(prof agents.Profile, own map[string]string, workdir string) map[string]string {
	env := passedVars()
	for _, m := range []map[string]string{agents.GitIdentity(workdir), prof.BoxEnv(), own} {
		for k, v := range m {
			env[k] = v
		}
	}
	return env
}

// passedVars are the variables of ace's environment that pass into a box.
func passedVars() map[string]string {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && passed(k) {
			env[k] = v
		}
	}
	return env
}

// registries are the package registries every box may reach: an agent installs dependencies as a developer does.
var registries = []string{
	"registry.npmjs.org:443", "registry.yarnpkg.com:443", "proxy.golang.org:443", "sum.golang.org:443",
	"pypi.org:443", "files.pythonhosted.org:443", "crates.io:443", "index.crates.io:443", "static.crates.io:443",
	"rubygems.org:443",
}

// allowed is one destination of a run's allow list (an egress allow pattern) and what named it, for people.
type allowed struct {
	dest, from string
}

// allow is the run's allow list: the agent CLI's endpoints, the hosts of the *_BASE_URL variables it gets and of
// the endpoints its own settings name, the git remote's host and the tracker's endpoints (and GitHub's MCP
// server), the package
// registries, the forwarded loopback ports, and [sandbox] allow. It is computed from the run and the
// configuration alone (the user's, never the run's home), so that an ace restarted serves the same list.
func (sb *Boxes) allow(r *store.Run, prof agents.Profile, cfg config.SandboxConfig) []string {
	var list []string
	for _, a := range sb.allowed(r, prof, cfg) {
		list = append(list, a.dest)
	}
	slices.Sort(list)
	return slices.Compact(list)
}

// allowed is the allow list with what named each destination, in the order named.
func (sb *Boxes) allowed(r *store.Run, prof agents.Profile, cfg config.SandboxConfig) []allowed {
	var list []allowed
	add := func(from string, dests ...string) {
		for _, d := range dests {
			list = append(list, allowed{dest: d, from: from})
			if port := loopbackPort(d); port != 0 && !strings.HasPrefix(d, "127.0.0.1:") {
				// The box's forwarder tunnels a loopback port to this machine's 127.0.0.1 (forwardPort).
				list = append(list, allowed{dest: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), from: from})
			}
		}
	}
	addURL := func(from, raw string) {
		if dest := urlDest(raw); dest != "" {
			add(from, dest)
		}
	}
	add(prof.Name+"'s own endpoints", prof.Endpoints()...)
	addURL("the git remote", r.State.RemoteURL)
	if sb.o.Tracker != nil { // CheckReach opens no tracker: it probes the model's endpoints
		for _, ep := range sb.o.Tracker.Endpoints() {
			addURL(ep.From, ep.URL)
		}
	}
	addURL("agents."+prof.Name+".github_mcp", prof.GitHubMCP)
	for _, ep := range sb.endpoints(prof) {
		addURL(ep.From, ep.URL)
	}
	add("the package registries", registries...)
	for _, p := range cfg.Forward {
		add("[sandbox] forward", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	}
	add("[sandbox] allow", cfg.Allow...)
	return list
}

// endpoints are the endpoints the run's agent is pointed at: the *_BASE_URL variables it gets (those of ace's
// environment that pass into a box, the CLI's box variables, its env in ace.toml) and what its CLI's own settings
// name, read where the run's home copies them from (agents.SettingsEndpoints).
func (sb *Boxes) endpoints(prof agents.Profile) []agents.Endpoint {
	return endpointsOf(prof, sb.o.Root, agents.CurrentUser())
}

// endpointsOf is endpoints for user, whose settings a run's home copies.
func endpointsOf(prof agents.Profile, root string, user agents.UserEnv) []agents.Endpoint {
	var out []agents.Endpoint
	for _, m := range []struct {
		vars  map[string]string
		where string
	}{{passedVars(), ""}, {prof.BoxEnv(), ""}, {prof.Env, " (agents." + prof.Name + ".env)"}} {
		keys := slices.Sorted(maps.Keys(m.vars))
		for _, k := range keys {
			if strings.HasSuffix(k, "_BASE_URL") {
				out = append(out, agents.Endpoint{URL: m.vars[k], From: k + m.where, Model: prof.ModelVar(k)})
			}
		}
	}
	for _, ep := range agents.SettingsEndpoints(prof, root, user) {
		ep.From = prof.Name + "'s " + ep.From
		out = append(out, ep)
	}
	return out
}

// modelDests are where the agent sends its model requests, as allow patterns with what named each: the endpoints
// its configuration points its model at, else its CLI's own API (none for a custom agent pointed nowhere).
func modelDests(prof agents.Profile, eps []agents.Endpoint) []allowed {
	var out []allowed
	for _, ep := range eps {
		d := urlDest(ep.URL)
		if port := loopbackPort(d); port != 0 {
			d = net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) // where the box's forwarder tunnels it
		}
		if d != "" && ep.Model && !slices.ContainsFunc(out, func(a allowed) bool { return a.dest == d }) {
			out = append(out, allowed{dest: d, from: ep.From})
		}
	}
	if len(out) == 0 && prof.ModelAPI() != "" {
		out = append(out, allowed{dest: prof.ModelAPI(), from: prof.Name + "'s API"})
	}
	return out
}

// ModelDest is where prof's agent sends its model requests, as its configuration names it, and what named it
// ("" for a custom agent pointed nowhere).
func (sb *Boxes) ModelDest(prof agents.Profile) (dest, from string) {
	if ds := modelDests(prof, sb.endpoints(prof)); len(ds) > 0 {
		return ds[0].dest, ds[0].from
	}
	return "", ""
}

// forwarded is a loopback port of this machine that a box forwards, and what named it.
type forwarded struct {
	port int
	from string
}

// forwards are the ports of the allow list's destinations on this machine's loopback: a box reaches each at the
// same port of its own loopback (sandbox.Spec.Forward), since a CLI connects to 127.0.0.1 directly, never
// through a proxy — what ace allows, the agent reaches. Each port once, with the first that named it; below are
// those under sandbox.MinForwardPort, which a box cannot listen on.
func forwards(list []allowed) (fwd, below []forwarded) {
	for _, a := range list {
		port := loopbackPort(a.dest)
		has := func(f forwarded) bool { return f.port == port }
		switch {
		case port == 0 || slices.ContainsFunc(fwd, has) || slices.ContainsFunc(below, has):
		case port < sandbox.MinForwardPort:
			below = append(below, forwarded{port: port, from: a.from})
		default:
			fwd = append(fwd, forwarded{port: port, from: a.from})
		}
	}
	byPort := func(a, b forwarded) int { return a.port - b.port }
	slices.SortFunc(fwd, byPort)
	slices.SortFunc(below, byPort)
	return fwd, below
}

// loopbackPort is the port of an allow pattern on this machine's loopback (127.0.0.0/8, ::1, localhost), 0 for
// any other destination or a pattern without a port.
func loopbackPort(dest string) int {
	host, port, err := net.SplitHostPort(dest)
	if err != nil {
		return 0
	}
	n, err := strconv.Atoi(port)
	if err != nil || n <= 0 || n > 65535 {
		return 0
	}
	if ip := net.ParseIP(host); strings.EqualFold(host, "localhost") || ip != nil && ip.IsLoopback() {
		return n
	}
	return 0
}

// urlDest is an http(s) URL's host:port as an allow pattern, "" for anything else (an ssh remote, a path).
func urlDest(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return ""
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"https": "443", "http": "80"}[u.Scheme]
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// readOnly are the host paths a box shows read-only besides the system, and the links it makes: the agent's
// program and what it needs to run (install.go), ace's helper scripts (codex-gh), the mirror objects the
// working copy borrows, and [sandbox] read_only — those that exist: a package cache not made yet must not stop
// the agent.
func (sb *Boxes) readOnly(r *store.Run, prof agents.Profile, cfg config.SandboxConfig, exe, path string) ([]string, []sandbox.Link) {
	var out []string
	var links []sandbox.Link
	add := func(paths ...string) {
		for _, p := range paths {
			if _, err := os.Stat(p); err == nil && filepath.IsAbs(p) && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	programs := []string{exe}
	if cli := prof.WrappedCLI(exe); cli != "" {
		programs = append(programs, cli)
	}
	for _, prog := range programs {
		in := installOf(prog, r.Workdir, path)
		for _, p := range in.paths {
			// Not the box's own /tmp, nor a directory that is or holds one the box must not see (ace's root, your
			// home, the secrets file): a program's own file there is shown, never its directory.
			if p != "/tmp" && !slices.ContainsFunc(sb.hidden(), func(h string) bool { return within(h, p) }) {
				add(p)
			}
		}
		links = append(links, in.links...)
	}
	add(filepath.Join(sb.o.Root, "bin"))
	add(sb.mirrorObjects(r)...)
	add(cfg.ReadOnly...)
	return out, links
}

// hidden are the host paths a box must not see even where a read-only path holds them: ace's root, the user's
// home, the secrets file.
func (sb *Boxes) hidden() []string {
	out := []string{sb.o.Root}
	if h, err := os.UserHomeDir(); err == nil && h != "/" {
		out = append(out, h)
	}
	if f := sb.o.Config.Secrets.File; f != "" {
		out = append(out, f)
	}
	return out
}

// mirrorObjects are the object directories a working copy borrows — its repository's mirror's, which git inside
// the box reads — as ace knows them, never as the copy's objects/info/alternates (the agent's to write) says.
func (sb *Boxes) mirrorObjects(r *store.Run) []string {
	if sb.o.Mirrors == nil {
		return nil
	}
	objects, err := sb.o.Mirrors.MirrorObjects(r.Repo)
	if err != nil {
		return nil
	}
	return []string{objects}
}
