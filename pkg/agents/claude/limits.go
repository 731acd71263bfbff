package claude

import (
	"regexp"

	"github.com/aceworks/ace/pkg/agents/agent"
)

// Limits is how claude says its account hit a usage or rate limit. The wording was observed against a
// scripted model server answering the providers' real error responses.
func Limits() agent.LimitPatterns {
	re := regexp.MustCompile
	return agent.LimitPatterns{
		Screen: []*regexp.Regexp{
			// Subscriber: "⎿  You've hit your session limit · resets 7:17pm (UTC)" (also weekly/Opus limits);
			// 2.1.331: "You've hit your 5-hour limit · resets 5:09am (UTC)".
			re(`You(?:'|’)ve hit your (?:[\w-]+ )*limit(?: · resets (?P<reset>[^·\n]*?\([^)\n]+\)))?`),
			// API key: a 429 claude does not wait out by itself, and an overload it gave up on.
			re(`API Error: (?:Request rejected \(429\)|529 Overloaded)`),
		},
		Menus: []agent.Dialog{
			// "❯ 1. Stop and wait for limit to reset" is preselected: Enter keeps it.
			agent.Choose("limit-menu", `Stop and wait for limit to reset`, `^Stop and wait`),
		},
		Stream: []*regexp.Regexp{
			re(`You(?:'|’)ve hit your (?:[\w-]+ )*limit(?: · resets (?P<reset>[^·\n]*?\([^)\n]+\)))?`),
			re(`API Error: (?:Request rejected \(429\)|529 Overloaded)|"?rate_limit(?:_error)?"?`),
		},
		Clock: agent.ClockZoned,
	}
}
