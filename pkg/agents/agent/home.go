package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"

	"github.com/aceworks/ace/pkg/untrusted"
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

// Files is the home as the tree its agent writes: ace edits the CLI's settings there beneath it alone.
func (h IsolatedHome) Files() untrusted.Tree { return untrusted.New(h.Home) }

// SettingsMax bounds a settings file ace reads back from a home or working copy to merge into (claude's
// .claude.json keeps a history, and grows).
const SettingsMax = 16 << 20

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

// MergeJSON edits the JSON object in the file rel of t (an empty one when there is none) and writes it back
// atomically, 0600 in a 0700 directory: settings already there are merged into, not replaced. The tree is the
// agent's (its home, its working copy): the file is read and written beneath it alone (package untrusted).
func MergeJSON(t untrusted.Tree, rel string, edit func(map[string]any)) error {
	if dir := path.Dir(rel); dir != "." {
		if err := t.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	m := map[string]any{}
	if b, err := t.ReadFile(rel, SettingsMax); err == nil {
		if err := json.Unmarshal(b, &m); err != nil {
			return fmt.Errorf("%s: %w", t.Path(rel), err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	edit(m)
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return t.WriteFile(rel, b, 0o600)
}
