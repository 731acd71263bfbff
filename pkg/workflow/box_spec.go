package workflow

import (
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
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

// allow is the run's allow list: the agent CLI's endpoints, the hosts of the *_BASE_URL variables it gets, the git
// remote's host and GitHub's API (and its MCP server), the package registries, the forwarded loopback ports, and
// [sandbox] allow. It is computed from the run and the configuration alone, so that an ace restarted serves the
// same list.
func (sb *sandboxes) allow(r *store.Run, prof agents.Profile, cfg config.SandboxConfig) []string {
	e := sb.e
	list := slices.Clone(prof.Endpoints())
	urls := []string{r.State.RemoteURL, e.cfg.GitHub.APIURL, prof.GitHubMCP}
	if e.cfg.GitHub.APIURL == "" && e.cfg.Tracker.Kind == "github" {
		urls = append(urls, "https://api.github.com")
	}
	for _, m := range []map[string]string{passedVars(), prof.BoxEnv(), prof.Env} {
		for k, v := range m {
			if strings.HasSuffix(k, "_BASE_URL") {
				urls = append(urls, v)
			}
		}
	}
	for _, u := range urls {
		if dest := urlDest(u); dest != "" {
			list = append(list, dest)
		}
	}
	list = append(list, registries...)
	for _, p := range cfg.Forward {
		list = append(list, net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	}
	list = append(list, cfg.Allow...)
	slices.Sort(list)
	return slices.Compact(list)
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

// readOnly are the host paths a box shows read-only besides the system: the agent's program and what it needs to
// run (box_install.go), ace's helper scripts (codex-gh), the mirror objects the working copy borrows, and
// [sandbox] read_only — those that exist: a package cache not made yet must not stop the agent.
func (sb *sandboxes) readOnly(r *store.Run, prof agents.Profile, cfg config.SandboxConfig, exe, path string) []string {
	e := sb.e
	var out []string
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
		for _, d := range installDirs(prog, r.Workdir, path) {
			// Not a directory that is the box's own (/tmp) or one it must not see whole: what is hidden inside a
			// directory shown is masked anyway (sandbox.Spec.Hide).
			if d != "/tmp" && !slices.Contains(sb.hidden(), d) {
				add(d)
			}
		}
	}
	add(filepath.Join(e.o.Root, "bin"))
	add(sb.mirrorObjects(r)...)
	add(cfg.ReadOnly...)
	return out
}

// hidden are the host paths a box must not see even where a read-only path holds them: ace's root, the user's
// home, the secrets file.
func (sb *sandboxes) hidden() []string {
	e := sb.e
	out := []string{e.o.Root}
	if h, err := os.UserHomeDir(); err == nil && h != "/" {
		out = append(out, h)
	}
	if f := e.cfg.Secrets.File; f != "" {
		out = append(out, f)
	}
	return out
}

// objectLender is a Workspaces that says where a repository's working copies borrow objects from (the workspace
// manager).
type objectLender interface {
	MirrorObjects(repo string) (string, error)
}

// mirrorObjects are the object directories a working copy borrows — its repository's mirror's, which git inside
// the box reads — as ace knows them, never as the copy's objects/info/alternates (the agent's to write) says.
func (sb *sandboxes) mirrorObjects(r *store.Run) []string {
	m, ok := sb.e.o.Workspaces.(objectLender)
	if !ok {
		return nil
	}
	objects, err := m.MirrorObjects(r.Repo)
	if err != nil {
		return nil
	}
	return []string{objects}
}
