package agents

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunHome: a boxed run's home gets the CLI's settings from the home it uses outside a box (once: the run's
// own changes stay), its login linked, onboarding and trust as an isolated home has them, and HOME pointing at it.
func TestRunHome(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for agent, c := range map[string]struct{ settings, login, configVar, rules string }{
		"claude": {".claude/settings.json", ".claude/.credentials.json", "CLAUDE_CONFIG_DIR", ""},
		"codex":  {".codex/config.toml", ".codex/auth.json", "CODEX_HOME", ".codex/rules/team/default.rules"},
		"gemini": {".gemini/GEMINI.md", ".gemini/oauth_creds.json", "GEMINI_CLI_HOME", ".gemini/policies/ask.toml"},
	} {
		user, home, work := t.TempDir(), filepath.Join(t.TempDir(), "run-home"), t.TempDir()
		writeFile(t, filepath.Join(user, c.settings), "# the user's own\n")
		writeFile(t, filepath.Join(user, c.login), `{"token":"x"}`)
		writeFile(t, filepath.Join(user, ".ssh", "id_ed25519"), "key")
		if c.rules != "" {
			// The user's approval rules (codex's execpolicy, gemini's policies): a box must not drop them.
			writeFile(t, filepath.Join(user, c.rules), "# ask before git push\n")
		}
		p, _ := Builtin(agent)
		from := UserEnv{Home: user}
		auth, err := p.SignIn(ctx, resolver(nil), from)
		if err != nil {
			t.Fatal(err)
		}
		env, err := PrepareRunHome(p, home, from, work, MCPConfig{}, auth)
		if err != nil {
			t.Fatal(err)
		}
		if env["HOME"] != home || !strings.HasPrefix(env[c.configVar], home) {
			t.Errorf("%s: env %v, want HOME and %s in %s", agent, env, c.configVar, home)
		}
		if b, _ := os.ReadFile(filepath.Join(home, c.settings)); !strings.HasPrefix(string(b), "# the user's own\n") {
			t.Errorf("%s: settings %q, want the user's copied", agent, b)
		}
		if b, _ := os.ReadFile(filepath.Join(home, c.rules)); c.rules != "" && string(b) != "# ask before git push\n" {
			t.Errorf("%s: approval rules %q, want the user's copied", agent, b)
		}
		if dst, err := os.Readlink(filepath.Join(home, c.login)); err != nil || dst != filepath.Join(user, c.login) {
			t.Errorf("%s: login → %q, %v", agent, dst, err)
		}
		if _, err := os.Stat(filepath.Join(home, ".ssh")); err == nil {
			t.Errorf("%s: the run's home got more than the CLI's settings", agent)
		}
		writeFile(t, filepath.Join(home, c.settings), "# changed in the run\n")
		if _, err := PrepareRunHome(p, home, from, work, MCPConfig{}, auth); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(filepath.Join(home, c.settings)); !strings.HasPrefix(string(b), "# changed in the run\n") {
			t.Errorf("%s: a restart copied the settings over the run's own: %q", agent, b)
		}
	}
}

// TestCodexBoxArgv: in a box codex runs its commands without its own sandbox (bubblewrap, which cannot nest in
// the box); every other argument stays.
func TestCodexBoxArgv(t *testing.T) {
	t.Parallel()
	p, _ := Builtin("codex")
	argv, err := p.HeadlessArgv(Vars{Model: "m", Workdir: "/w", AceBin: "/b"})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(p.BoxArgv(argv), " ")
	if want := strings.Replace(strings.Join(argv, " "), "--sandbox workspace-write", "--sandbox danger-full-access", 1); got != want {
		t.Errorf("boxed codex: %s\nwant %s", got, want)
	}
	if c, _ := Builtin("claude"); strings.Join(c.BoxArgv([]string{"claude", "--model", "x"}), " ") != "claude --model x" {
		t.Error("claude's command changed in a box")
	}
}
