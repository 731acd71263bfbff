package agents

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/aceworks/ace/pkg/atomicfile"
)

// MCPConfig names an MCP server for the agent. It carries the NAME of the variable holding the token, never
// the token.
type MCPConfig struct {
	GitHubURL      string
	GitHubTokenEnv string
}

// isolatedHome is what an adapter needs to fill an isolated home.
type isolatedHome struct {
	Home, Workdir string
	MCP           MCPConfig
	Auth          Auth
}

// PrepareHome makes <root>/homes/<agent>/ a home in which the agent trusts workdir, skips onboarding and finds
// the user's login when that is how it signs in (auth.LoginFiles, linked, so a token the CLI refreshes stays
// one token; never copied into the working copy), and returns the variables that point the agent at it.
// Existing settings are merged into, not replaced. Files are 0600 and directories 0700.
func PrepareHome(p Profile, root, workdir string, mcp MCPConfig, auth Auth) (map[string]string, error) {
	home := isolatedHomeDir(p, root)
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	a := p.adapter
	if a == nil || a.isolate == nil {
		return map[string]string{"HOME": home}, nil
	}
	env, err := a.isolate(isolatedHome{Home: home, Workdir: workdir, MCP: mcp, Auth: auth})
	if err != nil {
		return nil, err
	}
	if len(auth.LoginFiles) > 0 {
		if err := linkLogin(a.configDir(home, nil), auth.LoginFiles); err != nil {
			return nil, fmt.Errorf("bring the %s login into the isolated home: %w", p.Name, err)
		}
	}
	return env, nil
}

// isolatedHomeDir is the agent's isolated home under root: one per agent, shared by its runs.
func isolatedHomeDir(p Profile, root string) string { return filepath.Join(root, "homes", p.Name) }

// linkLogin links each login file into dir. A real file already there is the isolated home's own login (the
// user signed in inside it) and is kept.
func linkLogin(dir string, files map[string]string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for name, src := range files {
		dst := filepath.Join(dir, name)
		fi, err := os.Lstat(dst)
		switch {
		case err == nil && fi.Mode()&os.ModeSymlink == 0:
			continue
		case err == nil:
			if cur, _ := os.Readlink(dst); cur == src {
				continue
			}
			if err := os.Remove(dst); err != nil {
				return err
			}
		case !errors.Is(err, os.ErrNotExist):
			return err
		}
		if err := os.Symlink(src, dst); err != nil {
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
	return mergeJSON(filepath.Join(workdir, ".mcp.json"), func(m map[string]any) {
		setMCPServer(m, map[string]any{"type": "http", "url": mcp.GitHubURL,
			"headers": map[string]any{"Authorization": "Bearer ${" + mcp.GitHubTokenEnv + "}"}})
	})
}

// setMCPServer puts server under mcpServers.github, keeping the other servers of the file.
func setMCPServer(m map[string]any, server map[string]any) {
	servers, _ := m["mcpServers"].(map[string]any)
	if servers == nil {
		servers = map[string]any{}
	}
	servers["github"] = server
	m["mcpServers"] = servers
}

// object returns m[key] as an object, adding an empty one when it is missing or not an object.
func object(m map[string]any, key string) map[string]any {
	o, _ := m[key].(map[string]any)
	if o == nil {
		o = map[string]any{}
		m[key] = o
	}
	return o
}

func mergeJSON(path string, edit func(map[string]any)) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	m := map[string]any{}
	if b, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(b, &m); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	edit(m)
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, b, 0o600)
}
