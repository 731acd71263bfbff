package agents

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aceworks/ace/pkg/secrets"
)

func resolver(env map[string]string) *secrets.Resolver {
	return secrets.NewResolver(secrets.Options{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestSignInAsUsersHaveIt: an API key is never required; any of the CLI's ways in works, every sign-in secret
// ace has is injected, and with none at all the error names the choices.
func TestSignInAsUsersHaveIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		agent  string
		env    map[string]string
		files  []string // relative to HOME
		method string
		inject []string
	}{
		{"claude", map[string]string{"ANTHROPIC_API_KEY": "k"}, nil, "api-key", []string{"ANTHROPIC_API_KEY"}},
		{"claude", map[string]string{"CLAUDE_CODE_OAUTH_TOKEN": "t"}, nil, "oauth-token", []string{"CLAUDE_CODE_OAUTH_TOKEN"}},
		{"claude", map[string]string{"ANTHROPIC_API_KEY": "k", "CLAUDE_CODE_OAUTH_TOKEN": "t"}, nil, "api-key",
			[]string{"ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"}},
		{"claude", nil, []string{".claude/.credentials.json"}, "login", nil},
		{"codex", map[string]string{"OPENAI_API_KEY": "k"}, nil, "api-key", []string{"OPENAI_API_KEY"}},
		{"codex", nil, []string{".codex/auth.json"}, "login", nil},
		{"gemini", map[string]string{"GEMINI_API_KEY": "k"}, nil, "api-key", []string{"GEMINI_API_KEY"}},
		{"gemini", nil, []string{".gemini/oauth_creds.json"}, "login", nil},
		{"fake", nil, nil, "", nil},
	}
	for _, c := range cases {
		home := t.TempDir()
		for _, f := range c.files {
			writeFile(t, filepath.Join(home, f), "{}")
		}
		p, _ := Builtin(c.agent)
		auth, err := p.SignIn(ctx, resolver(c.env), UserEnv{Home: home, Getenv: func(string) string { return "" }})
		if err != nil {
			t.Errorf("%s %v %v: %v", c.agent, c.env, c.files, err)
			continue
		}
		if auth.Method != c.method || len(auth.Secrets) != len(c.inject) {
			t.Errorf("%s %v %v: method %q, %d secrets; want %q, %v", c.agent, c.env, c.files, auth.Method, len(auth.Secrets), c.method, c.inject)
		}
		for _, n := range c.inject {
			if auth.Secrets[n] != c.env[n] {
				t.Errorf("%s: %s not injected", c.agent, n)
			}
		}
		if c.method == "login" && len(auth.LoginFiles) == 0 {
			t.Errorf("%s: login without its files", c.agent)
		}
	}
	for agent, want := range map[string][]string{
		"claude": {"ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "claude setup-token", "~/.claude/.credentials.json"},
		"codex":  {"OPENAI_API_KEY", "ChatGPT", "~/.codex/auth.json"},
		"gemini": {"GEMINI_API_KEY", "Google", "~/.gemini/oauth_creds.json"},
	} {
		p, _ := Builtin(agent)
		_, err := p.SignIn(ctx, resolver(nil), UserEnv{Home: t.TempDir()})
		for _, w := range want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s without any sign-in: %v, want it to name %s", agent, err, w)
			}
		}
	}
}

// TestSignInHonoursConfigDirVariables: CODEX_HOME, CLAUDE_CONFIG_DIR and GEMINI_CLI_HOME move the login.
func TestSignInHonoursConfigDirVariables(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "codex", "auth.json"), "{}")
	writeFile(t, filepath.Join(dir, "claude", ".credentials.json"), "{}")
	writeFile(t, filepath.Join(dir, "gem", ".gemini", "oauth_creds.json"), "{}")
	vars := map[string]string{"CODEX_HOME": filepath.Join(dir, "codex"), "CLAUDE_CONFIG_DIR": filepath.Join(dir, "claude"),
		"GEMINI_CLI_HOME": filepath.Join(dir, "gem")}
	for _, agent := range []string{"claude", "codex", "gemini"} {
		p, _ := Builtin(agent)
		auth, err := p.SignIn(context.Background(), resolver(nil), UserEnv{Home: t.TempDir(), Getenv: func(k string) string { return vars[k] }})
		if err != nil || auth.Method != "login" {
			t.Errorf("%s: %+v %v", agent, auth, err)
		}
	}
}

// TestRequiredSecretsStayRequired: secrets named in ace.toml are still required, and a custom agent with no
// sign-in knowledge needs nothing else.
func TestRequiredSecretsStayRequired(t *testing.T) {
	t.Parallel()
	p, _ := Resolve("claude", Override{Secrets: []string{"MY_PROXY_KEY"}})
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".claude", ".credentials.json"), "{}")
	if _, err := p.SignIn(context.Background(), resolver(nil), UserEnv{Home: home}); err == nil || !strings.Contains(err.Error(), "MY_PROXY_KEY") {
		t.Errorf("a missing required secret: %v", err)
	}
	custom, _ := Resolve("mine", Override{Command: "mine", Secrets: []string{"MINE_KEY"}})
	auth, err := custom.SignIn(context.Background(), resolver(map[string]string{"MINE_KEY": "v"}), UserEnv{Home: home})
	if err != nil || auth.Secrets["MINE_KEY"] != "v" {
		t.Errorf("custom agent: %+v %v", auth, err)
	}
}

// TestIsolatedHomeGetsTheLogin: the user's login files are linked into the isolated home's config dir (never
// into the working copy), gemini's auth method follows the sign-in, and a login made inside the isolated home
// is kept.
func TestIsolatedHomeGetsTheLogin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for agent, rel := range map[string]string{"claude": ".claude/.credentials.json", "codex": ".codex/auth.json", "gemini": ".gemini/oauth_creds.json"} {
		user, root, work := t.TempDir(), t.TempDir(), t.TempDir()
		writeFile(t, filepath.Join(user, rel), `{"token":"x"}`)
		p, _ := Builtin(agent)
		auth, err := p.SignIn(ctx, resolver(nil), UserEnv{Home: user})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := PrepareHome(p, root, work, MCPConfig{}, auth); err != nil {
			t.Fatal(err)
		}
		linked := filepath.Join(root, "homes", agent, rel)
		if dst, err := os.Readlink(linked); err != nil || dst != filepath.Join(user, rel) {
			t.Errorf("%s: %s → %q, %v", agent, linked, dst, err)
		}
		if entries, _ := os.ReadDir(work); len(entries) != 0 {
			t.Errorf("%s: the working copy got %v", agent, entries)
		}
		if agent == "gemini" {
			b, _ := os.ReadFile(filepath.Join(root, "homes", agent, ".gemini", "settings.json"))
			if !strings.Contains(string(b), `"oauth-personal"`) {
				t.Errorf("gemini signed in with Google, settings: %s", b)
			}
		}
		// The isolated home's own login wins over a link.
		if err := os.Remove(linked); err != nil {
			t.Fatal(err)
		}
		writeFile(t, linked, "own")
		if _, err := PrepareHome(p, root, work, MCPConfig{}, auth); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(linked); string(b) != "own" {
			t.Errorf("%s: the isolated home's own login was replaced", agent)
		}
	}
}

func TestCustomAgents(t *testing.T) {
	t.Parallel()
	// Exec-only: no tmux command needed.
	p, err := Resolve("mine", Override{Runner: "exec", Headless: "/opt/bin/my-agent --json", HeadlessFormat: "claude"})
	if err != nil || p.Program() != "/opt/bin/my-agent" {
		t.Fatalf("exec-only custom agent: %q %v", p.Program(), err)
	}
	// A binary not named after the agent is the program; only codex's own wrapper names a CLI behind it.
	p, _ = Resolve("mine", Override{Command: "/opt/bin/other --x"})
	if p.Program() != "/opt/bin/other" || p.WrappedCLI("/opt/bin/other") != "" {
		t.Errorf("custom: %q %q", p.Program(), p.WrappedCLI("/opt/bin/other"))
	}
	c, _ := Builtin("codex")
	if c.WrappedCLI("/home/u/.ace/bin/codex-gh") != "codex" || c.Program() != "codex" {
		t.Errorf("codex wrapper: %q %q", c.WrappedCLI("/x/codex-gh"), c.Program())
	}
	c, _ = Resolve("claude", Override{Command: "/opt/claude-wrapper --model {model}"})
	if c.WrappedCLI("/opt/claude-wrapper") != "" {
		t.Error("a user's own claude command was second-guessed")
	}
}
