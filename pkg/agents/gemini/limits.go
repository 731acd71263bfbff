package gemini

import (
	"regexp"

	"github.com/aceworks/ace/pkg/agents/agent"
)

// limits is how gemini says its account hit a usage or rate limit. The wording was observed against a scripted
// model server answering the providers' real error responses.
func limits() agent.LimitPatterns {
	re := regexp.MustCompile
	return agent.LimitPatterns{
		Screen: []*regexp.Regexp{
			// Interactive, a daily quota opens a box: "Usage limit reached for gemini-3.5-flash-lite." with
			// "● 1. Switch to <model>" "2. Stop".
			re(`Usage limit reached for [\w.-]*\w|You have exhausted your (?:daily )?quota|Quota exceeded for quota metric|RESOURCE_EXHAUSTED`),
		},
		Menus: []agent.Dialog{
			// "● 1. Switch to <model>" (or, once no model is left, "● 1. Keep trying") is preselected: Enter would
			// change the user's model or retry into the limit; 2 stops and keeps the model.
			agent.Choose("limit-menu", `(?s)Usage limit reached for .*\d\. (?:Switch to|Keep trying).*2\. Stop`, `^Stop`),
		},
		Stream: []*regexp.Regexp{
			re(`You have exhausted your (?:daily )?quota|Quota exceeded for quota metric|RESOURCE_EXHAUSTED`),
		},
		ExitCodes:         []int{173},
		UnsavedUntilReply: true,
	}
}
