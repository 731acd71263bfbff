package headless

import (
	"strings"
	"testing"
	"time"
)

// Streams as the CLIs print them when the scripted server answers the providers' 429 responses.
func TestLimitEventsAndCost(t *testing.T) {
	t.Parallel()
	claude := strings.Join([]string{
		`{"type":"system","subtype":"init","session_id":"s1","model":"claude-sonnet-4-5"}`,
		`{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1741114620,"rateLimitType":"five_hour"},"session_id":"s1"}`,
		`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"You've hit your session limit · resets 7:17pm (UTC)"}]},"error":"rate_limit","session_id":"s1"}`,
		`{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"result":"You've hit your session limit · resets 7:17pm (UTC)","session_id":"s1","total_cost_usd":0.0123,"usage":{"input_tokens":10,"output_tokens":5,"cache_read_input_tokens":100,"cache_creation_input_tokens":40}}`,
	}, "\n")
	tr, err := ParseAll("claude", strings.NewReader(claude))
	if err != nil {
		t.Fatal(err)
	}
	var limits []Event
	for _, e := range tr.Events {
		if e.Kind == KindLimit {
			limits = append(limits, e)
		}
	}
	if len(limits) != 3 || limits[0].ResetsAt != 1741114620 {
		t.Fatalf("limit events %+v, want 3, the first with resetsAt", limits)
	}
	u := tr.Usage
	if u.InputTokens != 10 || u.OutputTokens != 5 || u.CachedTokens != 100 || u.CacheWriteTokens != 40 || u.CostUSD != 0.0123 {
		t.Errorf("usage %+v", u)
	}
	// An allowed rate-limit event is information, not a limit.
	tr, _ = ParseAll("claude", strings.NewReader(`{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","resetsAt":1}}`))
	if len(tr.Events) != 0 {
		t.Errorf("allowed rate_limit_event gave %+v", tr.Events)
	}
	// The supervisor's status keeps the limit and its reset.
	s := &supervisor{}
	for _, e := range limits {
		s.event(e)
	}
	if !s.status.Limited || !s.status.LimitResetsAt.Equal(time.Unix(1741114620, 0)) {
		t.Errorf("status limited %v at %v", s.status.Limited, s.status.LimitResetsAt)
	}
}
