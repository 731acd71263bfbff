package codex

import (
	"regexp"

	"github.com/aceworks/ace/pkg/agents/agent"
	"github.com/aceworks/ace/pkg/headless"
)

// retries: codex retries its model's stream, first over a websocket ("Reconnecting... 2/5 (stream disconnected
// before completion: Connection refused (os error 111))"), then over HTTP, for as long as it takes ("Reconnecting...
// waiting for network (Connection failed: error sending request)"). On its screen (0.169.0) the working line
// says it and the error goes under it: "• Reconnecting... waiting for network (9s • esc to interrupt)" /
// "  └ Connection failed: error sending request". Its exec stream and its app-server say it in an error message.
var retries = agent.RetryPatterns{
	Screen: []*regexp.Regexp{
		regexp.MustCompile(`Reconnecting\.\.\. (?:(?P<attempt>\d+)/(?P<max>\d+)|waiting for network)[^\n]*(?:\n[^\S\n]*└ (?P<error>[^\n]+))?`),
	},
}

// retryMessage reads codex's own retry message (exec's error event, app-server's error notification).
var retryMessage = []*regexp.Regexp{
	regexp.MustCompile(`^Reconnecting\.\.\. (?:(?P<attempt>\d+)/(?P<max>\d+)|waiting for network)\s*(?:\((?P<error>.*)\))?\s*$`),
}

// retryEvent is codex's error message as a retry event, when it is one.
func retryEvent(msg string) (headless.Event, bool) {
	rt, ok := agent.MatchRetry(retryMessage, msg)
	if !ok {
		return headless.Event{}, false
	}
	return headless.Event{Kind: headless.KindRetry, Attempt: rt.Attempt, MaxAttempts: rt.Max, Text: rt.Error}, true
}
