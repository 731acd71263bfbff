package agents

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/aceworks/ace/pkg/agents/agent"
	"github.com/aceworks/ace/pkg/untrusted"
)

// PrepareHome makes <root>/homes/<agent>/ a home in which the agent trusts workdir, skips onboarding and finds
// the user's login when that is how it signs in (auth.LoginFiles, linked, so a token the CLI refreshes stays
// one token; never copied into the working copy), and returns the variables that point the agent at it.
// Existing settings are merged into, not replaced. Files are 0600 and directories 0700.
func PrepareHome(p Profile, root, workdir string, mcp MCPConfig, auth Auth) (map[string]string, error) {
	return prepareHome(p, isolatedHomeDir(p, root), workdir, mcp, auth)
}

// PrepareRunHome makes home the agent's home for one boxed run (a box sees neither the user's home nor ace's
// isolated ones): the CLI's settings (Adapter.Settings) copied once from the config dir it uses outside a box
// (from, as AgentHome gives it), then everything PrepareHome does to an isolated home. The variables returned
// point the CLI at it, HOME included. The CLI keeps its sessions there: ace reads their usage, and the CLI
// resumes them, from the same home for the whole run.
func PrepareRunHome(p Profile, home string, from UserEnv, workdir string, mcp MCPConfig, auth Auth) (map[string]string, error) {
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	if a := p.Adapter(); a != nil && a.ConfigDir != nil {
		src, dst := a.ConfigDir(from.Home, from.Getenv), a.ConfigDir(home, nil)
		rel, err := filepath.Rel(home, dst)
		if err != nil || !filepath.IsLocal(rel) {
			return nil, fmt.Errorf("the %s config dir %s is not in the run's home", p.Name, dst)
		}
		for _, f := range a.Settings {
			if err := copyOnce(filepath.Join(src, f), untrusted.New(home), filepath.Join(rel, f)); err != nil {
				return nil, fmt.Errorf("bring the %s settings into the run's home: %w", p.Name, err)
			}
		}
	}
	env, err := prepareHome(p, home, workdir, mcp, auth)
	if err != nil {
		return nil, err
	}
	env["HOME"] = home
	return env, nil
}

// copyOnce copies the user's src to dst in the run's home unless something is at dst already or src is not: a
// regular file (0600), or a directory's regular files and subdirectories (0700), as a CLI's rules or policies
// directory is. src is the user's own; the home is the agent's (a later start copies into what it left), so dst
// is written beneath it alone.
func copyOnce(src string, home untrusted.Tree, dst string) error {
	if _, err := home.Lstat(dst); !errors.Is(err, fs.ErrNotExist) {
		return err // there already (nil), or a path ace refuses
	}
	fi, err := os.Stat(src)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return copyDir(src, home, dst)
	}
	return copyFile(src, home, dst)
}

func copyFile(src string, home untrusted.Tree, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := home.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	return home.WriteFile(dst, b, 0o600)
}

// copyDir copies the user's tree at src to dst; what is neither a regular file nor a directory (a socket, a link
// out of the tree) is left out.
func copyDir(src string, home untrusted.Tree, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return home.MkdirAll(filepath.Join(dst, rel), 0o700)
		case d.Type().IsRegular():
			return copyFile(path, home, filepath.Join(dst, rel))
		}
		return nil
	})
}

func prepareHome(p Profile, home, workdir string, mcp MCPConfig, auth Auth) (map[string]string, error) {
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	a := p.Adapter()
	if a == nil || a.Isolate == nil {
		return map[string]string{"HOME": home}, nil
	}
	env, err := a.Isolate(agent.IsolatedHome{Home: home, Workdir: workdir, MCP: mcp, Auth: auth})
	if err != nil {
		return nil, err
	}
	if len(auth.LoginFiles) > 0 {
		rel, err := filepath.Rel(home, a.ConfigDir(home, nil))
		if err != nil || !filepath.IsLocal(rel) {
			return nil, fmt.Errorf("the %s config dir is not in its home %s", p.Name, home)
		}
		if err := linkLogin(untrusted.New(home), rel, auth.LoginFiles); err != nil {
			return nil, fmt.Errorf("bring the %s login into the isolated home: %w", p.Name, err)
		}
	}
	return env, nil
}

// isolatedHomeDir is the agent's isolated home under root: one per agent, shared by its runs.
func isolatedHomeDir(p Profile, root string) string { return filepath.Join(root, "homes", p.Name) }

// linkLogin links each login file into dir of the home. A real file already there is the isolated home's own
// login (the user signed in inside it) and is kept. The home is the agent's: the links are made beneath it.
func linkLogin(home untrusted.Tree, dir string, files map[string]string) error {
	if err := home.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for name, src := range files {
		dst := filepath.Join(dir, name)
		fi, err := home.Lstat(dst)
		switch {
		case err == nil && fi.Mode()&os.ModeSymlink == 0:
			continue
		case err == nil:
			if cur, _ := home.Readlink(dst); cur == src {
				continue
			}
			if err := home.Remove(dst); err != nil {
				return err
			}
		case !errors.Is(err, os.ErrNotExist):
			return err
		}
		if err := home.Symlink(src, dst); err != nil {
			return err
		}
	}
	return nil
}

// WriteProjectMCP writes the MCP servers an agent reads from the working copy itself (claude's .mcp.json,
// git-excluded by the workspace). Other agents read theirs from their home (see PrepareHome). The file holds
// the NAME of the token variable, which the CLI expands at start; never the token.
func WriteProjectMCP(p Profile, workdir string, mcp MCPConfig) error {
	if !p.ReadsProjectMCP() || mcp.GitHubURL == "" {
		return nil
	}
	return agent.MergeJSON(untrusted.New(workdir), ".mcp.json", func(m map[string]any) {
		agent.SetMCPServer(m, map[string]any{"type": "http", "url": mcp.GitHubURL,
			"headers": map[string]any{"Authorization": "Bearer ${" + mcp.GitHubTokenEnv + "}"}})
	})
}

// AgentHome is the home a run's agent uses: the isolated one PrepareHome makes under root, or the user's, where
// the agent's env (and, failing that, the user's) may move the CLI's config dir (CLAUDE_CONFIG_DIR, CODEX_HOME,
// GEMINI_CLI_HOME).
func AgentHome(p Profile, root string, user UserEnv) UserEnv {
	if p.Home == "isolated" {
		// PrepareHome points every variable that moves a config dir at the isolated home itself.
		return UserEnv{Home: isolatedHomeDir(p, root)}
	}
	return UserEnv{Home: user.Home, Getenv: func(k string) string {
		if v, ok := p.Env[k]; ok {
			return v
		}
		if user.Getenv != nil {
			return user.Getenv(k)
		}
		return ""
	}}
}
