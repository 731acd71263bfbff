package codex

import (
	"testing"
	"time"
)

func TestResetTime(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 13, 40, 0, time.UTC)
	msg := "You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/settings/usage to purchase more credits or try again at 2:13 PM."
	if got, want := resetTime(msg, now), time.Date(2026, 11, 26, 14, 13, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("reset = %s, want %s", got, want)
	}
	// A time of day already past is tomorrow's.
	if got, want := resetTime("try again at 9:05 AM.", now), time.Date(2026, 11, 27, 9, 5, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("reset = %s, want %s", got, want)
	}
	// The minute of the limit itself is today's (the message rounds down).
	if got, want := resetTime("try again at 12:13 PM.", now), time.Date(2026, 11, 26, 12, 13, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("reset = %s, want %s", got, want)
	}
	if got := resetTime("The usage limit has been reached", now); !got.IsZero() {
		t.Errorf("reset = %s for a message without a time", got)
	}
}

func TestErrorInfo(t *testing.T) {
	for raw, want := range map[string]string{
		`"usageLimitExceeded"`:                                  "usageLimitExceeded",
		`{"responseStreamDisconnected":{"httpStatusCode":502}}`: "responseStreamDisconnected",
		`null`: "",
	} {
		if got := errorInfo([]byte(raw)); got != want {
			t.Errorf("errorInfo(%s) = %q, want %q", raw, got, want)
		}
	}
}
