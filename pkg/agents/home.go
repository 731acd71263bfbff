package agents

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// MCPConfig names an MCP server for the agent. It carries the NAME of the variable holding the token, never
// the token.
type MCPConfig struct {
	GitHubURL      string
	GitHubTokenEnv string
}

// PrepareHome makes <root>/homes/<agent>/ a home in which the agent trusts workdir and skips onboarding, and
// returns the variables that point the agent at it. Existing settings are merged into, not replaced. Files are
// 0600 and directories 0700.
func PrepareHome(p Profile, root, workdir string, mcp MCPConfig) (map[string]string, error) {
	home := filepath.Join(root, "homes", p.Name)
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	switch p.Name {
	case "claude":
		dir := filepath.Join(home, ".claude")
		err := mergeJSON(filepath.Join(dir, ".claude.json"), func(m map[string]any) {
			m["hasCompletedOnboarding"] = true
			projects, _ := m["projects"].(map[string]any)
			if projects == nil {
				projects = map[string]any{}
			}
			proj, _ := projects[workdir].(map[string]any)
			if proj == nil {
				proj = map[string]any{}
			}
			proj["hasTrustDialogAccepted"] = true
			projects[workdir] = proj
			m["projects"] = projects
		})
		return map[string]string{"CLAUDE_CONFIG_DIR": dir}, err
	case "codex":
		dir := filepath.Join(home, ".codex")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
		path := filepath.Join(dir, "config.toml")
		old, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		section := fmt.Sprintf("[projects.%q]", workdir)
		add := ""
		if !strings.Contains(string(old), section) {
			add += fmt.Sprintf("\n%s\ntrust_level = \"trusted\"\n", section)
		}
		if mcp.GitHubURL != "" && !strings.Contains(string(old), "[mcp_servers.github]") {
			add += fmt.Sprintf("\n[mcp_servers.github]\nurl = %q\nbearer_token_env_var = %q\n", mcp.GitHubURL, mcp.GitHubTokenEnv)
		}
		if add != "" {
			if err := os.WriteFile(path, append(old, []byte(add)...), 0o600); err != nil {
				return nil, err
			}
		}
		return map[string]string{"CODEX_HOME": dir}, nil
	case "gemini":
		dir := filepath.Join(home, ".gemini")
		if err := mergeJSON(filepath.Join(dir, "trustedFolders.json"), func(m map[string]any) { m[workdir] = "TRUST_FOLDER" }); err != nil {
			return nil, err
		}
		err := mergeJSON(filepath.Join(dir, "settings.json"), func(m map[string]any) {
			if mcp.GitHubURL != "" {
				// gemini expands $VAR in settings: the file names the variable, the token stays in the env.
				setMCPServer(m, map[string]any{"httpUrl": mcp.GitHubURL,
					"headers": map[string]any{"Authorization": "Bearer $" + mcp.GitHubTokenEnv}})
			}
			sec, _ := m["security"].(map[string]any)
			if sec == nil {
				sec = map[string]any{}
			}
			auth, _ := sec["auth"].(map[string]any)
			if auth == nil {
				auth = map[string]any{}
			}
			auth["selectedType"] = "gemini-api-key"
			sec["auth"] = auth
			m["security"] = sec
		})
		return map[string]string{"GEMINI_CLI_HOME": home}, err
	}
	return map[string]string{"HOME": home}, nil
}

// WriteProjectMCP writes the MCP servers an agent reads from the working copy itself: claude's .mcp.json
// (git-excluded by the workspace). Other agents read theirs from their home (see PrepareHome). The file holds
// the NAME of the token variable, which claude expands at start; never the token.
func WriteProjectMCP(p Profile, workdir string, mcp MCPConfig) error {
	if p.Name != "claude" || mcp.GitHubURL == "" {
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
	return os.WriteFile(path, b, 0o600)
}
