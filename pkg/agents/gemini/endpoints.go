package gemini

import "github.com/aceworks/ace/pkg/agents/agent"

// configEndpoints: the MCP servers of settings.json that gemini reaches over HTTP (url, httpUrl). Its model
// endpoint moves only by environment (GOOGLE_GEMINI_BASE_URL), which ace reads as such.
func configEndpoints(dir string) []agent.Endpoint {
	servers, _ := agent.JSONFile(dir, "settings.json")["mcpServers"].(map[string]any)
	return agent.ServerURLs(servers, "settings.json", "mcpServers", "url", "httpUrl")
}
