package config

import (
	"fmt"
	"strings"

	"github.com/aceworks/ace/pkg/agents"
)

// MaxAttempts bounds agent.attempts and an ace:best-of-N label: each attempt is an agent working at once, with its
// own working copy and slot, and its own spending; and an attempt's stored number, -(10·A + k), holds k in one
// digit (store.AttemptNumber).
const MaxAttempts = 9

// validateBestOf checks [agent] attempts and attempts_agents: a number of attempts from 1 (no best-of) to
// MaxAttempts, and agents that exist.
func (c *Config) validateBestOf(bad func(key, format string, args ...any)) {
	if n := c.Agent.Attempts; n < 1 || n > MaxAttempts {
		bad("agent.attempts", "must be 1 (one agent per issue) to %d, is %d", MaxAttempts, n)
	}
	for i, n := range c.Agent.AttemptsAgents {
		key := fmt.Sprintf("agent.attempts_agents[%d]", i)
		switch _, defined := c.Agents[n]; {
		case strings.TrimSpace(n) == "":
			bad(key, "empty (name an agent: %s, or one defined under [agents])", strings.Join(agents.BuiltinNames(), ", "))
		case n == AgentAuto:
			bad(key, "%q chooses one agent per issue; name the agents of the attempts", n)
		case !defined && !isBuiltin(n):
			bad(key, "%q is neither a built-in agent (%s) nor defined under [agents]", n, strings.Join(agents.BuiltinNames(), ", "))
		}
	}
}

// AttemptAgent is the agent of best-of attempt k (1-based) of a run whose own agent is agent: attempts_agents in
// turn, from the first, else agent every time.
func (c *Config) AttemptAgent(agent string, k int) string {
	if l := c.Agent.AttemptsAgents; len(l) > 0 && k > 0 {
		return l[(k-1)%len(l)]
	}
	return agent
}
