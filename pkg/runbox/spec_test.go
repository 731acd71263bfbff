package runbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/sandbox"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tracker/github"
)

func writeExec(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestInstallOf: an npm CLI on PATH through a bin link, in a node_modules reached through a symlinked directory
// (a checkout sharing another's install), shows its install root and its interpreter's file, and the link PATH
// finds it through is made in the box to the file it leads to; a binary shows itself; the system's are never
// listed.
func TestInstallOf(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	shared := filepath.Join(dir, "shared", "node_modules")
	writeExec(t, filepath.Join(shared, "@acme", "cli", "bin", "cli.js"), "#!/usr/bin/env -S node --no-warnings\nconsole.log(1)\n")
	if err := os.Symlink("../@acme/cli/bin/cli.js", filepath.Join(mkdir(t, shared, ".bin"), "acme")); err != nil {
		t.Fatal(err)
	}
	checkout := mkdir(t, dir, "checkout")
	if err := os.Symlink(shared, filepath.Join(checkout, "node_modules")); err != nil {
		t.Fatal(err)
	}
	nodeDir := filepath.Join(dir, "nodejs", "bin")
	writeExec(t, filepath.Join(nodeDir, "node"), "\x7fELF")
	path := strings.Join([]string{filepath.Join(checkout, "node_modules", ".bin"), nodeDir, "/usr/bin", "relative"}, ":")
	got := installOf("acme", filepath.Join(dir, "wt"), path)
	want := []string{shared, filepath.Join(nodeDir, "node")}
	link := sandbox.Link{Path: filepath.Join(checkout, "node_modules", ".bin", "acme"), Target: filepath.Join(shared, "@acme", "cli", "bin", "cli.js")}
	if !slices.Equal(got.paths, want) || !slices.Equal(got.links, []sandbox.Link{link}) {
		t.Errorf("installOf(acme) = %q, %q\nwant %q, %q", got.paths, got.links, want, link)
	}
	if got := installOf("sh", filepath.Join(dir, "wt"), "/usr/bin:/bin"); len(got.paths)+len(got.links) != 0 {
		t.Errorf("installOf(sh) = %+v, want nothing beyond the system", got)
	}
	if got := installOf(filepath.Join(nodeDir, "node"), filepath.Join(dir, "wt"), ""); !slices.Equal(got.paths, []string{filepath.Join(nodeDir, "node")}) {
		t.Errorf("installOf(node by path) = %q", got.paths)
	}
}

// TestInstallOfCustomCommand: a custom agent's command shows itself, never the directory it sits in (nor what
// lies beside it); one linked from a bin directory shows the file the link leads to and the link; a Python CLI
// in a virtual environment shows the environment.
func TestInstallOfCustomCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	work := mkdir(t, dir, "work")
	script := filepath.Join(work, "agent.sh")
	writeExec(t, script, "#!/bin/sh\necho hi\n")
	writeExec(t, filepath.Join(work, "notes-with-secrets.txt"), "secret")
	if got := installOf(script, filepath.Join(dir, "wt"), ""); !slices.Equal(got.paths, []string{script}) || len(got.links) != 0 {
		t.Errorf("installOf(%s) = %+v, want the script alone", script, got)
	}
	bin := mkdir(t, dir, "bin")
	if err := os.Symlink("../work/agent.sh", filepath.Join(bin, "agent")); err != nil {
		t.Fatal(err)
	}
	got := installOf("agent", filepath.Join(dir, "wt"), bin)
	if !slices.Equal(got.paths, []string{script}) || !slices.Equal(got.links, []sandbox.Link{{Path: filepath.Join(bin, "agent"), Target: script}}) {
		t.Errorf("installOf(agent on PATH) = %+v", got)
	}
	venv := mkdir(t, dir, "venvs", "tool")
	writeExec(t, filepath.Join(venv, "pyvenv.cfg"), "home = /usr/bin\n")
	writeExec(t, filepath.Join(venv, "bin", "python"), "\x7fELF")
	writeExec(t, filepath.Join(venv, "bin", "tool"), "#!"+filepath.Join(venv, "bin", "python")+"\nimport tool\n")
	if got := installOf(filepath.Join(venv, "bin", "tool"), filepath.Join(dir, "wt"), ""); !slices.Equal(got.paths, []string{venv}) {
		t.Errorf("installOf(a Python CLI) = %+v, want its virtual environment", got)
	}
}

// TestInstallOfWorkingCopyProgram: a program in the working copy (the agent's) is in the box already and adds
// nothing; its #! line adds an interpreter found on PATH by name, never a path the agent wrote there — nor
// does ace wait on a FIFO in its place.
func TestInstallOfWorkingCopyProgram(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	workdir := mkdir(t, dir, "wt")
	secret := filepath.Join(dir, "secret", "id_ed25519")
	writeExec(t, secret, "key")
	writeExec(t, filepath.Join(workdir, "run.sh"), "#!"+secret+"\n")
	if got := installOf("./run.sh", workdir, ""); len(got.paths)+len(got.links) != 0 {
		t.Errorf("installOf(./run.sh) = %+v, want nothing", got)
	}
	if err := os.Symlink(secret, filepath.Join(workdir, "linked.sh")); err != nil {
		t.Fatal(err)
	}
	if got := installOf("./linked.sh", workdir, ""); len(got.paths)+len(got.links) != 0 {
		t.Errorf("installOf(./linked.sh) = %+v, want nothing (a link out of the working copy is not followed)", got)
	}
	nodeDir := mkdir(t, dir, "node", "bin")
	writeExec(t, filepath.Join(nodeDir, "node"), "\x7fELF")
	writeExec(t, filepath.Join(workdir, "cli.js"), "#!/usr/bin/env node\n")
	if got := installOf("./cli.js", workdir, nodeDir); !slices.Equal(got.paths, []string{filepath.Join(nodeDir, "node")}) {
		t.Errorf("installOf(./cli.js) = %+v, want node", got)
	}
	if err := syscall.Mkfifo(filepath.Join(workdir, "fifo.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	done := make(chan install, 1)
	go func() { done <- installOf("./fifo.sh", workdir, nodeDir) }()
	select {
	case got := <-done:
		if len(got.paths)+len(got.links) != 0 {
			t.Errorf("installOf(./fifo.sh) = %+v", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("installOf waited on a FIFO")
	}
}

func mkdir(t *testing.T, parts ...string) string {
	t.Helper()
	p := filepath.Join(parts...)
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestBoxAllowList: the CLI's endpoints, the remote's host and the tracker's endpoints (GitHub's API), *_BASE_URL
// hosts, the registries, forwarded ports and the configured additions; an ssh remote adds nothing.
func TestBoxAllowList(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	gh, err := github.New(context.Background(), github.Options{Token: "ghs_allowListToken"})
	if err != nil {
		t.Fatal(err)
	}
	sb := New(Options{Config: cfg, Root: t.TempDir(), Tracker: gh})
	prof, _ := agents.Builtin("claude")
	prof.Env = map[string]string{"ANTHROPIC_BASE_URL": "http://gateway.corp.example:8080/v1"}
	r := &store.Run{State: store.RunState{RemoteURL: "https://git.example/acme/widgets.git"}}
	got := sb.allow(r, prof, config.SandboxConfig{Forward: []int{11434}, Allow: []string{"*.internal.example"}})
	for _, want := range []string{"api.anthropic.com:443", "git.example:443", "api.github.com:443", "gateway.corp.example:8080",
		"registry.npmjs.org:443", "127.0.0.1:11434", "*.internal.example"} {
		if !slices.Contains(got, want) {
			t.Errorf("allow list lacks %s: %q", want, got)
		}
	}
	r.State.RemoteURL = "git@git.example:acme/widgets.git"
	if got := sb.allow(r, prof, config.SandboxConfig{}); slices.ContainsFunc(got, func(d string) bool { return strings.HasPrefix(d, "git.example") }) {
		t.Errorf("an ssh remote opened its host: %q", got)
	}
}

// TestBoxForwardsLoopback: every destination of the allow list on this machine's loopback — a gateway in the
// agent's env, the git remote, [sandbox] allow, [sandbox] forward — is forwarded into the box, once, with what
// named it; a name on the loopback (localhost) is allowed at 127.0.0.1 too, where the box's forwarder tunnels.
func TestBoxForwardsLoopback(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	sb := New(Options{Config: cfg, Root: t.TempDir()})
	prof, _ := agents.Builtin("claude")
	prof.Env = map[string]string{"ANTHROPIC_BASE_URL": "http://localhost:4000"}
	r := &store.Run{State: store.RunState{RemoteURL: "http://127.0.0.1:9418/acme/widgets.git"}}
	sc := config.SandboxConfig{Forward: []int{11434}, Allow: []string{"127.0.0.1:5432", "10.0.0.1:80", "*.internal.example", "127.0.0.1", "localhost:80"}}
	fwd, below := forwards(sb.allowed(r, prof, sc))
	var got []string
	for _, f := range fwd {
		got = append(got, fmt.Sprintf("%d %s", f.port, f.from))
	}
	// A port below 1024, which a box cannot listen on, is named apart, for an event saying so.
	if len(below) != 1 || below[0].port != 80 || below[0].from != "[sandbox] allow" {
		t.Errorf("below 1024: %+v", below)
	}
	want := []string{"4000 ANTHROPIC_BASE_URL (agents.claude.env)", "5432 [sandbox] allow", "9418 the git remote", "11434 [sandbox] forward"}
	if !slices.Equal(got, want) {
		t.Errorf("forwards:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	allow := sb.allow(r, prof, sc)
	for _, d := range []string{"localhost:4000", "127.0.0.1:4000", "127.0.0.1:9418"} {
		if !slices.Contains(allow, d) {
			t.Errorf("allow list lacks %s: %q", d, allow)
		}
	}
	if msg := forwardMessage(fwd); !strings.Contains(msg, "127.0.0.1:4000 (ANTHROPIC_BASE_URL (agents.claude.env))") {
		t.Errorf("the event: %s", msg)
	}
	if p := proxyPort([]int{3128, 3129, 4000}); p != 3130 {
		t.Errorf("proxyPort = %d, want the first port no forward takes", p)
	}
}

// TestSettingsEndpoints: the endpoints each CLI's own settings name, read in the user's config dir (which a
// run's home copies): codex's config.toml (the OpenAI endpoint, a provider of the user's, an MCP server),
// claude's settings.json env, gemini's MCP servers.
func TestSettingsEndpoints(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	for rel, content := range map[string]string{
		".codex/config.toml": "model = \"m\"\nopenai_base_url = \"http://127.0.0.1:4000/v1\"\n\n[model_providers.local]\n" +
			"name = \"Local\"\nbase_url = \"http://localhost:11434/v1\"\n\n[mcp_servers.docs]\nurl = \"http://[::1]:7000/mcp\"\n",
		".claude/settings.json": `{"env": {"ANTHROPIC_BASE_URL": "http://127.0.0.1:4100", "OTHER": "x"}}`,
		".gemini/settings.json": `{"mcpServers": {"tools": {"httpUrl": "http://127.0.0.1:7100/mcp"}}}`,
	} {
		writeExec(t, filepath.Join(home, rel), content)
	}
	user := agents.UserEnv{Home: home, Getenv: func(string) string { return "" }}
	for cli, want := range map[string][]string{
		"codex": {"http://127.0.0.1:4000/v1 codex's config.toml openai_base_url",
			"http://localhost:11434/v1 codex's config.toml model_providers.local.base_url",
			"http://[::1]:7000/mcp codex's config.toml mcp_servers.docs.url"},
		"claude": {"http://127.0.0.1:4100 claude's settings.json env.ANTHROPIC_BASE_URL"},
		"gemini": {"http://127.0.0.1:7100/mcp gemini's settings.json mcpServers.tools.httpUrl"},
	} {
		prof, _ := agents.Builtin(cli)
		var got []string
		for _, ep := range endpointsOf(prof, t.TempDir(), user) {
			if !strings.HasSuffix(ep.From, "_BASE_URL") || strings.Contains(ep.From, "'s ") { // not ace's own environment's
				got = append(got, ep.URL+" "+ep.From)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: endpoints\n%s\nwant\n%s", cli, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestSocketPath: a root too deep for a unix socket gets a private directory of the user's under the temporary
// one, the same for every call.
func TestSocketPath(t *testing.T) {
	t.Parallel()
	short := New(Options{Root: "/srv/ace"})
	if p, err := short.socketPath(7); err != nil || p != "/srv/ace/boxes/7/egress/egress.sock" {
		t.Errorf("socketPath = %q, %v", p, err)
	}
	deep := New(Options{Root: "/srv/" + strings.Repeat("a-very-long-directory-name/", 5) + "root"})
	p, err := deep.socketPath(7)
	if err != nil || len(p) > maxSocketPath || !strings.HasPrefix(p, "/") || !strings.HasSuffix(p, "/7/egress.sock") {
		t.Fatalf("socketPath for a deep root = %q, %v", p, err)
	}
	t.Cleanup(func() { os.RemoveAll(filepath.Dir(filepath.Dir(p))) })
	if again, _ := deep.socketPath(7); again != p {
		t.Errorf("socketPath moved: %q then %q", p, again)
	}
	fi, err := os.Stat(filepath.Dir(filepath.Dir(p)))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the socket directory: %v %v, want 0700", fi.Mode(), err)
	}
}

// TestLines: ace show's line and the status comment's row say what the proxy refused.
func TestLines(t *testing.T) {
	t.Parallel()
	r := &store.Run{Issue: 9, State: store.RunState{Box: &store.BoxState{Proxy: "/x/egress.sock", Refused: 3,
		RefusedTo: []string{"evil.test:443", "paste.example:443"}, Reached: []string{"api.anthropic.com:443"}}}}
	if got := Line(r); got != "boxed; refused 3 connections to `evil.test:443`, `paste.example:443`; reached api.anthropic.com:443" {
		t.Errorf("Line = %q", got)
	}
	if got := StatusRow(r); !strings.HasPrefix(got, "| sandbox | refused 3 connections to `evil.test:443`, `paste.example:443` (`ace show 9`") {
		t.Errorf("StatusRow = %q", got)
	}
	r.State.Box = &store.BoxState{Unboxed: "sandbox unavailable: bubblewrap (bwrap) is not installed"}
	if got := Line(r); !strings.HasPrefix(got, "unboxed: ") || StatusRow(r) != "" {
		t.Errorf("unboxed: %q %q", got, StatusRow(r))
	}
}
