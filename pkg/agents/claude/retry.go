package claude

import (
	"fmt"
	"regexp"

	"github.com/aceworks/ace/pkg/agents/agent"
	"github.com/aceworks/ace/pkg/headless"
)

// retries: claude retries a failed API call up to 10 times, with back-off, drawing the wait on its spinner line —
// 2.1.197: "✻ Unable to connect to API (ConnectionRefused) · Retrying in 27s · attempt 7/10"; 2.1.331:
// "✻ Connection refused — a firewall or proxy may be blocking it (ECONNREFUSED) · retrying in 2s · attempt 6/10";
// a 429 or 529: "API error · Retrying in 40s · attempt 1/10". Its stream says so as system/api_retry (apiRetry).
var retries = agent.RetryPatterns{
	Screen: []*regexp.Regexp{
		regexp.MustCompile(`(?m)^(?P<error>[^\n]*?) · [Rr]etrying in [^·\n]* · attempt (?P<attempt>\d+)/(?P<max>\d+)`),
	},
}

// apiRetryText says what claude's system/api_retry reports: its HTTP status when the API answered one; "unknown"
// is its word for no answer at all (the connection failed).
func apiRetryText(status int, err string) string {
	switch {
	case status != 0:
		return fmt.Sprintf("API error %d (%s)", status, err)
	case err == "" || err == "unknown":
		return "no answer from the API"
	}
	return err
}

// apiRetry is a system/api_retry line of the headless stream as an event.
func apiRetry(m *streamLine) headless.Event {
	return headless.Event{Kind: headless.KindRetry, Attempt: m.Attempt, MaxAttempts: m.MaxRetries,
		Text: apiRetryText(m.ErrorStatus, m.Error)}
}
