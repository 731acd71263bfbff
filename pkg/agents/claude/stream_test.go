package claude

import (
	"strings"
	"testing"

	"github.com/aceworks/ace/pkg/headless"
	"github.com/aceworks/ace/pkg/headless/headlesstest"
	"github.com/aceworks/ace/pkg/usage"
)

func TestStreamFixtures(t *testing.T) {
	headlesstest.Check(t, Adapter().Parser, []headlesstest.Fixture{
		{
			File:    "testdata/stream.jsonl",
			Session: "8f1c2a4e-3b7d-4e1a-9c55-0d2f6b7a9e10", Model: "claude-sonnet-4-5-20250929",
			// The first message streamed as deltas and then arrived whole: it must appear once. The second
			// never got its complete message, so the deltas are emitted before the result.
			Assistant: []string{"I'll run the tests.", "The test fails; "},
			Tool:      "Bash", ToolInput: `{"command":"go test ./...","description":"Run the test suite"}`,
			ToolOutput: "--- FAIL: TestAdd (0.00s)\n    add_test.go:9: got 3, want 4\nFAIL", ToolErr: true,
			Status: "error_during_execution", ResultErr: true,
			Usage: headless.Usage{Usage: usage.Usage{InputTokens: 1200, OutputTokens: 310, CacheReadTokens: 15000,
				CacheWriteTokens: 3400, CostUSD: 0.0213}, Turns: 2, DurationMS: 18342},
			Raw: 2,
		},
		{
			File:    "testdata/stream_ok.jsonl",
			Session: "2d9e0f4a-77c1-4b6e-a0b3-5e8d1c2f3a40", Model: "claude-opus-4-1-20250805",
			Assistant: []string{"Let me look at README.md.\nThen I'll fix the typo.", "Fixed the typo in README.md."},
			Tool:      "Read", ToolInput: `{"file_path":"/home/user/project/README.md"}`,
			ToolOutput: "     1\t# Acme\n     2\tTeh tool.",
			Status:     "success", ResultText: "Fixed the typo in README.md.",
			Usage: headless.Usage{Usage: usage.Usage{InputTokens: 36, OutputTokens: 114, CacheReadTokens: 21000,
				CacheWriteTokens: 5200, CostUSD: 0.0411}, Turns: 4, DurationMS: 9120},
		},
	})
}

// TestLimitEvents: the stream as claude prints it when the scripted server answers the provider's 429, and
// what the turn cost.
func TestLimitEvents(t *testing.T) {
	t.Parallel()
	stream := strings.Join([]string{
		`{"type":"system","subtype":"init","session_id":"s1","model":"claude-sonnet-4-5"}`,
		`{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1741114620,"rateLimitType":"five_hour"},"session_id":"s1"}`,
		`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"You've hit your session limit · resets 7:17pm (UTC)"}]},"error":"rate_limit","session_id":"s1"}`,
		`{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"result":"You've hit your session limit · resets 7:17pm (UTC)","session_id":"s1","total_cost_usd":0.0123,"usage":{"input_tokens":10,"output_tokens":5,"cache_read_input_tokens":100,"cache_creation_input_tokens":40}}`,
	}, "\n")
	ps := headless.Parsers{"claude": Adapter().Parser}
	tr, err := ps.ParseAll("claude", strings.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	var limits []headless.Event
	for _, e := range tr.Events {
		if e.Kind == headless.KindLimit {
			limits = append(limits, e)
		}
	}
	if len(limits) != 3 || limits[0].ResetsAt != 1741114620 {
		t.Fatalf("limit events %+v, want 3, the first with resetsAt", limits)
	}
	want := usage.Usage{InputTokens: 10, OutputTokens: 5, CacheReadTokens: 100, CacheWriteTokens: 40, CostUSD: 0.0123}
	if tr.Usage.Usage != want {
		t.Errorf("usage %+v, want %+v", tr.Usage.Usage, want)
	}
	// An allowed rate-limit event is information, not a limit.
	tr, _ = ps.ParseAll("claude", strings.NewReader(`{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","resetsAt":1}}`))
	if len(tr.Events) != 0 {
		t.Errorf("allowed rate_limit_event gave %+v", tr.Events)
	}
}
