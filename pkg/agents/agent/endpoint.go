package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Endpoint is a network destination the CLI's own settings name: a gateway it sends its model requests to, an
// MCP server it connects to. A box allows it, and forwards it into the box when it is on this machine's loopback.
type Endpoint struct {
	URL string
	// From says where it was found, for people: "settings.json env.ANTHROPIC_BASE_URL".
	From string
	// Model: the CLI sends its model requests there (not an MCP server's, say).
	Model bool
}

// SettingsEndpoints are the endpoints the CLI's settings in its config dir dir name (Adapter.ConfigEndpoints), for
// the user whose settings a box's home copies; none for a custom agent or a CLI that keeps none there. A file
// that cannot be read or parsed names none: the CLI would not get far with it either.
func (p Profile) SettingsEndpoints(dir string) []Endpoint {
	if p.adapter == nil || p.adapter.ConfigEndpoints == nil || dir == "" {
		return nil
	}
	return p.adapter.ConfigEndpoints(dir)
}

// JSONFile reads the JSON object in dir/name; nil when it is not there or not an object.
func JSONFile(dir, name string) map[string]any {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return m
}

// BaseURLs are the *_BASE_URL variables of an env object in a settings file (claude's settings.json "env"), as
// endpoints from file's key key; those of the variables model names are the model's.
func BaseURLs(env map[string]any, file, key string, model []string) []Endpoint {
	var out []Endpoint
	for _, k := range sortedKeys(env) {
		if v, ok := env[k].(string); ok && strings.HasSuffix(k, "_BASE_URL") && v != "" {
			out = append(out, Endpoint{URL: v, From: fmt.Sprintf("%s %s.%s", file, key, k), Model: slices.Contains(model, k)})
		}
	}
	return out
}

// ModelVar reports whether the variable k moves the CLI's model endpoint (Adapter.ModelVars); for a custom agent,
// any *_BASE_URL may.
func (p Profile) ModelVar(k string) bool {
	if p.adapter == nil {
		return strings.HasSuffix(k, "_BASE_URL")
	}
	return slices.Contains(p.adapter.ModelVars, k)
}

// ModelAPI is the endpoint the CLI sends its model requests to when nothing moves it (Adapter.ModelAPI).
func (p Profile) ModelAPI() string {
	if p.adapter == nil {
		return ""
	}
	return p.adapter.ModelAPI
}

// ServerURLs are the URLs of the MCP servers in servers (a settings file's mcpServers object: each server's
// url, or httpUrl), as endpoints from file.
func ServerURLs(servers map[string]any, file, key string, fields ...string) []Endpoint {
	var out []Endpoint
	for _, name := range sortedKeys(servers) {
		s, _ := servers[name].(map[string]any)
		for _, f := range fields {
			if v, ok := s[f].(string); ok && v != "" {
				out = append(out, Endpoint{URL: v, From: fmt.Sprintf("%s %s.%s.%s", file, key, name, f)})
			}
		}
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
