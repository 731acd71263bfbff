package codex

import (
	"fmt"
	"path/filepath"
	"sort"

	"github.com/BurntSushi/toml"

	"github.com/aceworks/ace/pkg/agents/agent"
)

// codexConfig is what of config.toml names a destination: the OpenAI endpoint moved (openai_base_url), a
// provider of the user's own (model_providers.<id>.base_url: a gateway, a local model), an MCP server over HTTP.
type codexConfig struct {
	OpenAIBaseURL  string `toml:"openai_base_url"`
	ChatGPTBaseURL string `toml:"chatgpt_base_url"`
	ModelProviders map[string]struct {
		BaseURL string `toml:"base_url"`
	} `toml:"model_providers"`
	MCPServers map[string]struct {
		URL string `toml:"url"`
	} `toml:"mcp_servers"`
}

// configEndpoints reads config.toml's endpoints.
func configEndpoints(dir string) []agent.Endpoint {
	var c codexConfig
	if _, err := toml.DecodeFile(filepath.Join(dir, "config.toml"), &c); err != nil {
		return nil
	}
	var out []agent.Endpoint
	add := func(url, key string, model bool) {
		if url != "" {
			out = append(out, agent.Endpoint{URL: url, From: "config.toml " + key, Model: model})
		}
	}
	add(c.OpenAIBaseURL, "openai_base_url", true)
	add(c.ChatGPTBaseURL, "chatgpt_base_url", false)
	for _, id := range sorted(c.ModelProviders) {
		add(c.ModelProviders[id].BaseURL, fmt.Sprintf("model_providers.%s.base_url", id), true)
	}
	for _, id := range sorted(c.MCPServers) {
		add(c.MCPServers[id].URL, fmt.Sprintf("mcp_servers.%s.url", id), false)
	}
	return out
}

func sorted[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
