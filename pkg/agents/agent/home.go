package agent

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

// IsolatedHome is what an adapter needs to fill an isolated home (Adapter.Isolate).
type IsolatedHome struct {
	Home, Workdir string
	MCP           MCPConfig
	Auth          Auth
}

// SetMCPServer puts server under mcpServers.github, keeping the other servers of the file.
func SetMCPServer(m map[string]any, server map[string]any) {
	servers, _ := m["mcpServers"].(map[string]any)
	if servers == nil {
		servers = map[string]any{}
	}
	servers["github"] = server
	m["mcpServers"] = servers
}

// Object returns m[key] as an object, adding an empty one when it is missing or not an object.
func Object(m map[string]any, key string) map[string]any {
	o, _ := m[key].(map[string]any)
	if o == nil {
		o = map[string]any{}
		m[key] = o
	}
	return o
}

// MergeJSON edits the JSON object in the file at path (an empty one when there is none) and writes it back
// atomically, 0600 in a 0700 directory: settings already there are merged into, not replaced.
func MergeJSON(path string, edit func(map[string]any)) error {
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
