package headless

import (
	"testing"
	"time"
)

// TestStatusKeepsTheLimit: the supervisor's status keeps a limit the stream reported, and its reset.
func TestStatusKeepsTheLimit(t *testing.T) {
	t.Parallel()
	s := &supervisor{}
	for _, e := range []Event{
		{Kind: KindLimit, ResetsAt: 1741114620, Text: "rate limit: rejected"},
		{Kind: KindLimit, Text: "rate limit"},
		{Kind: KindLimit, Text: "API error 429"},
	} {
		s.event(e)
	}
	if !s.status.Limited || !s.status.LimitResetsAt.Equal(time.Unix(1741114620, 0)) {
		t.Errorf("status limited %v at %v", s.status.Limited, s.status.LimitResetsAt)
	}
}
