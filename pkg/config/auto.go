package config

import (
	"strings"

	"github.com/aceworks/ace/pkg/agents"
)

// AgentAuto as agent.default gives each new issue that chooses no agent to the one with the best solve rate per
// dollar in the repository's latest `ace eval run` (among those with agent.auto_min_runs scored runs), else to
// agent.auto_otherwise.
const AgentAuto = "auto"

// validateAuto checks the keys of agent.default = "auto": the agent it falls back to must exist, and an agent
// needs at least one scored run to be chosen.
func (c *Config) validateAuto(bad func(key, format string, args ...any)) {
	switch n := c.Agent.AutoOtherwise; {
	case strings.TrimSpace(n) == "" || n == AgentAuto:
		bad("agent.auto_otherwise", "with agent.default = \"auto\", name the agent of a repository whose eval recommends none: %s, "+
			"or one defined under [agents]", strings.Join(agents.BuiltinNames(), ", "))
	default:
		if _, ok := c.Agents[n]; !ok && !isBuiltin(n) {
			bad("agent.auto_otherwise", "%q is neither a built-in agent (%s) nor defined under [agents]", n,
				strings.Join(agents.BuiltinNames(), ", "))
		}
	}
	if c.Agent.AutoMinRuns < 1 {
		bad("agent.auto_min_runs", "must be at least 1, is %d", c.Agent.AutoMinRuns)
	}
}
