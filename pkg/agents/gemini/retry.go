package gemini

import (
	"regexp"

	"github.com/aceworks/ace/pkg/agents/agent"
	"github.com/aceworks/ace/pkg/headless"
)

// retries: gemini retries a failed API call with back-off and says so on stderr only (0.61.0, headless: "Attempt 3
// failed. Retrying with backoff... Error: exception TypeError: fetch failed sending request"), for about five
// minutes before its turn fails; its screen shows nothing but "Thinking...". Where it runs boxed, the box's proxy
// sees its connections to the model fail.
var retries = agent.RetryPatterns{
	Stderr: []*regexp.Regexp{
		regexp.MustCompile(`Attempt (?P<attempt>\d+) failed\. Retrying with backoff\.\.\.(?: Error: (?P<error>.*))?`),
	},
}

// ParseStderr implements headless.StderrParser: gemini's retries of its API.
func (p *parser) ParseStderr(line []byte) []headless.Event {
	rt, ok := agent.MatchRetry(retries.Stderr, string(line))
	if !ok {
		return nil
	}
	return []headless.Event{{Kind: headless.KindRetry, Attempt: rt.Attempt, MaxAttempts: rt.Max, Text: rt.Error}}
}
