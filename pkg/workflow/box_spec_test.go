package workflow

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
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

// TestInstallDirs: an npm CLI on PATH through a bin link, in a node_modules reached through a symlinked
// directory (a checkout sharing another's install), shows its node_modules at both paths and its interpreter's
// directory; a binary shows its own directory; the system's are never listed.
func TestInstallDirs(t *testing.T) {
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
	got := installDirs("acme", dir, path)
	want := []string{filepath.Join(checkout, "node_modules"), shared, nodeDir}
	if !slices.Equal(got, want) {
		t.Errorf("installDirs(acme) = %q\nwant %q", got, want)
	}
	if got := installDirs("sh", dir, "/usr/bin:/bin"); len(got) != 0 {
		t.Errorf("installDirs(sh) = %q, want nothing beyond the system", got)
	}
	if got := installDirs(filepath.Join(nodeDir, "node"), dir, ""); !slices.Equal(got, []string{nodeDir}) {
		t.Errorf("installDirs(node by path) = %q", got)
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

// TestBoxAllowList: the CLI's endpoints, the remote's and GitHub's hosts, *_BASE_URL hosts, the registries,
// forwarded ports and the configured additions; an ssh remote adds nothing.
func TestBoxAllowList(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	e := &Engine{cfg: cfg, o: Options{Config: cfg, Root: t.TempDir()}}
	sb := &sandboxes{e: e}
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

// TestSocketPath: a root too deep for a unix socket gets a private directory of the user's under the temporary
// one, the same for every call.
func TestSocketPath(t *testing.T) {
	t.Parallel()
	short := &sandboxes{e: &Engine{o: Options{Root: "/srv/ace"}}}
	if p, err := short.socketPath(7); err != nil || p != "/srv/ace/boxes/7/egress/egress.sock" {
		t.Errorf("socketPath = %q, %v", p, err)
	}
	deep := &sandboxes{e: &Engine{o: Options{Root: "/srv/" + strings.Repeat("a-very-long-directory-name/", 5) + "root"}}}
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

// TestSandboxLines: ace show's line and the status comment's row say what the proxy refused.
func TestSandboxLines(t *testing.T) {
	t.Parallel()
	r := &store.Run{Issue: 9, State: store.RunState{Box: &store.BoxState{Proxy: "/x/egress.sock", Refused: 3,
		RefusedTo: []string{"evil.test:443", "paste.example:443"}, Reached: []string{"api.anthropic.com:443"}}}}
	if got := SandboxLine(r); got != "boxed; refused 3 connections to `evil.test:443`, `paste.example:443`; reached api.anthropic.com:443" {
		t.Errorf("SandboxLine = %q", got)
	}
	if got := refusedLine(r); !strings.HasPrefix(got, "| sandbox | refused 3 connections to `evil.test:443`, `paste.example:443` (`ace show 9`") {
		t.Errorf("refusedLine = %q", got)
	}
	r.State.Box = &store.BoxState{Unboxed: "sandbox unavailable: bubblewrap (bwrap) is not installed"}
	if got := SandboxLine(r); !strings.HasPrefix(got, "unboxed: ") || refusedLine(r) != "" {
		t.Errorf("unboxed: %q %q", got, refusedLine(r))
	}
}
