package claude

import "github.com/aceworks/ace/pkg/agents/agent"

// modelVars move claude's model endpoint: a gateway, Bedrock's or Vertex's.
var modelVars = []string{"ANTHROPIC_BASE_URL", "ANTHROPIC_BEDROCK_BASE_URL", "ANTHROPIC_VERTEX_BASE_URL"}

// configEndpoints: the *_BASE_URL variables of settings.json's "env", which claude sets for itself (a gateway
// pointed at with ANTHROPIC_BASE_URL there rather than in the shell).
func configEndpoints(dir string) []agent.Endpoint {
	env, _ := agent.JSONFile(dir, "settings.json")["env"].(map[string]any)
	return agent.BaseURLs(env, "settings.json", "env", modelVars)
}
