package config

import (
	"fmt"
	"strings"

	"github.com/aceworks/ace/pkg/agents"
)

// validateFallback checks [agent] fallback and fallback_after: every agent named must exist (built in, or defined
// under [agents]) and be named once; a run is handed to each at most once, in the order given.
func (c *Config) validateFallback(bad func(key, format string, args ...any)) {
	seen := map[string]bool{}
	for i, n := range c.Agent.Fallback {
		key := fmt.Sprintf("agent.fallback[%d]", i)
		switch _, defined := c.Agents[n]; {
		case strings.TrimSpace(n) == "":
			bad(key, "empty (name an agent: %s, or one defined under [agents])", strings.Join(agents.BuiltinNames(), ", "))
		case !defined && !isBuiltin(n):
			bad(key, "%q is neither a built-in agent (%s) nor defined under [agents]", n, strings.Join(agents.BuiltinNames(), ", "))
		case seen[n]:
			bad(key, "%q is listed twice (a run falls back to each agent at most once)", n)
		}
		seen[n] = true
	}
	if d := c.Agent.FallbackAfter.Duration; d < 0 {
		bad("agent.fallback_after", "must not be negative (0 falls back at any usage limit), is %s", d)
	}
}
