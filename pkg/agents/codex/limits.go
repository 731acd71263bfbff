package codex

import (
	"regexp"

	"github.com/aceworks/ace/pkg/agents/agent"
)

// limits is how codex says its account hit a usage or rate limit. The wording was observed against a scripted
// model server answering the providers' real error responses.
func limits() agent.LimitPatterns {
	re := regexp.MustCompile
	return agent.LimitPatterns{
		Screen: []*regexp.Regexp{
			re(`You(?:'|’)ve hit your usage limit\.(?:[^\n]*?try again at (?P<reset>\d{1,2}:\d{2}\s*[AaPp][Mm]))?`),
		},
		Menus: []agent.Dialog{
			// "› 1. Switch to <model>" is preselected: Enter would change the user's model; 2 keeps it.
			agent.Choose("limit-menu", `Keep current model`, `^Keep current model`),
		},
		Stream: []*regexp.Regexp{
			re(`You(?:'|’)ve hit your usage limit\.(?:[^\n]*?try again at (?P<reset>\d{1,2}:\d{2}\s*[AaPp][Mm]))?`),
			re(`usage_limit_reached|429 Too Many Requests`),
		},
		Clock: agent.ClockLocal,
	}
}
