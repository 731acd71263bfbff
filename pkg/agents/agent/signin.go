package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/aceworks/ace/pkg/secrets"
)

// SignIn is one way a CLI authenticates: a secret ace injects into its environment (an API key, an OAuth
// token), or the CLI's own login, kept in files of its config dir.
type SignIn struct {
	Name string // stable: "api-key", "oauth-token", "login"
	// Secret is the variable that carries it; "" for a login kept in files.
	Secret string
	// Files are the login's files in the CLI's config dir; the first one says the user is signed in, the
	// others come along into an isolated home when they are there.
	Files []string
	// How tells a user how to get this sign-in, for the error that lists the choices.
	How string
}

// SecretSource resolves named secrets (pkg/secrets.Resolver); a missing one is an error wrapping
// secrets.ErrNotFound.
type SecretSource interface {
	ResolveAll(ctx context.Context, names []string) (map[string]string, error)
}

// UserEnv is where the user's own CLI state lives: HOME and the variables that move a CLI's config dir.
type UserEnv struct {
	Home   string
	Getenv func(string) string
	// Box is set for a boxed run's home, which its agent writes whole: the CLI's files are read beneath it alone,
	// so that a config dir the agent replaced with a link out of the home is refused.
	Box bool
}

// CurrentUser is the environment ace runs in.
func CurrentUser() UserEnv {
	home, _ := os.UserHomeDir()
	return UserEnv{Home: home, Getenv: os.Getenv}
}

// Auth is how an agent will sign in: the method the CLI will use, the secrets ace injects (every sign-in
// secret it has, plus the profile's required ones), and the user's login files an isolated home needs.
type Auth struct {
	Method  string // the SignIn's Name, "" for an agent without sign-in knowledge
	Detail  string // for people: "ANTHROPIC_API_KEY", "login in ~/.claude"
	Secrets map[string]string
	// LoginFiles are absolute paths of the user's login files (relative name → path), linked into an
	// isolated home; empty when the sign-in is a secret.
	LoginFiles map[string]string
}

// SecretNames are every secret the agent may be given: the required ones and its sign-in secrets.
func (p Profile) SecretNames() []string {
	names := append([]string{}, p.Secrets...)
	if p.adapter != nil {
		for _, s := range p.adapter.SignIns {
			if s.Secret != "" {
				names = append(names, s.Secret)
			}
		}
	}
	return names
}

// SignIn decides how the agent authenticates. Required secrets (agents.<name>.secrets) must resolve; the
// adapter's sign-in secrets are resolved when present and injected, all of them, and the CLI picks by its own
// precedence; a login in the user's config dir counts too. Only when the CLI has no way in at all is it an
// error, naming the choices.
func (p Profile) SignIn(ctx context.Context, src SecretSource, user UserEnv) (Auth, error) {
	got, err := src.ResolveAll(ctx, p.Secrets)
	if err != nil {
		return Auth{}, fmt.Errorf("secrets for agent %s: %w", p.Name, err)
	}
	auth := Auth{Secrets: got}
	a := p.adapter
	if a == nil || len(a.SignIns) == 0 {
		return auth, nil
	}
	var choices []string
	for _, s := range a.SignIns {
		if s.Secret != "" {
			m, err := src.ResolveAll(ctx, []string{s.Secret})
			if err != nil && !errors.Is(err, secrets.ErrNotFound) {
				return Auth{}, fmt.Errorf("agent %s sign-in %s: %w", p.Name, s.Secret, err)
			}
			if err == nil {
				auth.Secrets[s.Secret] = m[s.Secret]
				if auth.Method == "" {
					auth.Method, auth.Detail = s.Name, s.Secret
				}
				continue
			}
			choices = append(choices, s.Secret+" ("+s.How+")")
			continue
		}
		dir := a.ConfigDir(user.Home, user.Getenv)
		if files := loginFiles(dir, s.Files); files != nil {
			if auth.Method == "" {
				auth.Method, auth.Detail, auth.LoginFiles = s.Name, "login in "+tilde(dir, user.Home), files
			}
			continue
		}
		choices = append(choices, s.How+" (finds no "+filepath.Join(tilde(dir, user.Home), s.Files[0])+")")
	}
	if auth.Method == "" {
		if len(p.Secrets) > 0 {
			// Required secrets alone may be how a customised CLI signs in: trust the configuration.
			auth.Method, auth.Detail = "secrets", strings.Join(p.Secrets, ", ")
			return auth, nil
		}
		return Auth{}, fmt.Errorf("agent %s has no way to sign in; any one of these works: %s", p.Name, strings.Join(choices, "; or "))
	}
	return auth, nil
}

// loginFiles returns the login's files present in dir, nil when the first (the login itself) is not.
func loginFiles(dir string, names []string) map[string]string {
	if dir == "" || len(names) == 0 {
		return nil
	}
	out := map[string]string{}
	for i, n := range names {
		path := filepath.Join(dir, n)
		if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
			out[n] = path
		} else if i == 0 {
			return nil
		}
	}
	return out
}

func tilde(path, home string) string {
	if home != "" && strings.HasPrefix(path, home+string(filepath.Separator)) {
		return "~" + path[len(home):]
	}
	return path
}

// DirFromEnv is an Adapter.ConfigDir for CLIs whose variable names the config dir itself (CLAUDE_CONFIG_DIR,
// CODEX_HOME); parent is for CLIs whose variable names the home holding it (GEMINI_CLI_HOME).
func DirFromEnv(env, sub string, parent bool) func(string, func(string) string) string {
	return func(home string, getenv func(string) string) string {
		if getenv != nil {
			if v := getenv(env); v != "" {
				if parent {
					return filepath.Join(v, sub)
				}
				return v
			}
		}
		if home == "" {
			return ""
		}
		return filepath.Join(home, sub)
	}
}
