package modelserver_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aceworks/ace/pkg/modelserver"
)

// TestUsageIsBilledInEachAPIsShape: every model response bills non-zero tokens of each kind its API has, in
// the API's own fields (OpenAI's and Gemini's input counts include the cached part, Anthropic's do not), the
// log keeps what each response billed and the model it was for, and Served sums the scenario's requests only.
// A turn that says something before its tool call is one Anthropic message of two blocks.
func TestUsageIsBilledInEachAPIsShape(t *testing.T) {
	t.Parallel()
	srv := modelserver.Start(t, modelserver.Scenario{Dir: "/repo", Turns: []modelserver.Turn{
		modelserver.WriteFile("a.txt", "A\n").Saying("Writing it."),
	}})
	num := func(m map[string]any, path ...string) int64 {
		var v any = m
		for _, k := range path {
			v = v.(map[string]any)[k]
		}
		return int64(v.(float64))
	}
	last := func() modelserver.Request { r := srv.Requests(); return r[len(r)-1] }

	_, body := post(t, srv.URL()+"/v1/messages", `{"model":"claude-x","stream":true,`+anthropicTools+
		`,"messages":[{"role":"user","content":"go"}]}`, nil)
	ev := sseData(t, body)
	a := last()
	start := ev[0]["message"].(map[string]any)
	if num(start, "usage", "input_tokens") != a.Usage.InputTokens || num(start, "usage", "cache_read_input_tokens") != a.Usage.CacheReadTokens ||
		num(start, "usage", "cache_creation_input_tokens") != a.Usage.CacheWriteTokens || a.Model != "claude-x" {
		t.Errorf("message_start %v, billed %+v for %q", start["usage"], a.Usage, a.Model)
	}
	if blocks := strings.Count(body, `"type":"content_block_start"`); blocks != 2 {
		t.Errorf("%d content_block_start, want a text and a tool_use block:\n%s", blocks, body)
	}
	if delta := ev[len(ev)-2]; num(delta, "usage", "output_tokens") != a.Usage.OutputTokens {
		t.Errorf("message_delta %v, billed %+v", delta, a.Usage)
	}

	_, body = post(t, srv.URL()+"/v1/responses", `{"model":"gpt-x","tools":[{"type":"function","name":"shell"}],"input":"go"}`, nil)
	ev = sseData(t, body)
	o := last()
	resp := ev[len(ev)-1]["response"].(map[string]any)
	if num(resp, "usage", "input_tokens") != o.Usage.InputTokens+o.Usage.CacheReadTokens ||
		num(resp, "usage", "input_tokens_details", "cached_tokens") != o.Usage.CacheReadTokens ||
		num(resp, "usage", "output_tokens") != o.Usage.OutputTokens || o.Model != "gpt-x" {
		t.Errorf("response.completed usage %v, billed %+v for %q", resp["usage"], o.Usage, o.Model)
	}
	// A request for structured output (codex's session title) is a side request, whatever tools it declares.
	_, body = post(t, srv.URL()+"/v1/responses", `{"model":"gpt-x","tools":[{"type":"function","name":"shell"}],"input":"title?",`+
		`"text":{"format":{"type":"json_schema","schema":{"type":"object","properties":{"title":{"type":"string"}}}}}}`, nil)
	if !last().Side || !strings.Contains(body, `{\"title\":\"ok\"}`) {
		t.Errorf("title request: side=%v\n%s", last().Side, body)
	}

	_, body = post(t, srv.URL()+"/v1beta/models/gemini-x:streamGenerateContent?alt=sse", `{"contents":[{"role":"user","parts":[{"text":"go"}]}],`+
		`"tools":[{"functionDeclarations":[{"name":"write_file"}]}]}`, nil)
	var chunk map[string]any
	_ = json.Unmarshal([]byte(strings.TrimPrefix(strings.TrimSpace(body), "data: ")), &chunk)
	g := last()
	if num(chunk, "usageMetadata", "promptTokenCount") != g.Usage.InputTokens+g.Usage.CacheReadTokens ||
		num(chunk, "usageMetadata", "cachedContentTokenCount") != g.Usage.CacheReadTokens ||
		num(chunk, "usageMetadata", "candidatesTokenCount") != g.Usage.OutputTokens || g.Model != "gemini-x" {
		t.Errorf("usageMetadata %v, billed %+v for %q", chunk["usageMetadata"], g.Usage, g.Model)
	}

	for _, r := range []modelserver.Request{a, o, g} {
		if r.Usage.InputTokens == 0 || r.Usage.OutputTokens == 0 || r.Usage.CacheReadTokens == 0 {
			t.Errorf("%s billed a zero count: %+v", r.Path, r.Usage)
		}
	}
	if a.Usage.CacheWriteTokens == 0 || o.Usage.CacheWriteTokens != 0 || g.Usage.CacheWriteTokens != 0 {
		t.Errorf("cache writes: anthropic %d, openai %d, gemini %d; want only Anthropic's", a.Usage.CacheWriteTokens,
			o.Usage.CacheWriteTokens, g.Usage.CacheWriteTokens)
	}
	var want modelserver.Usage
	for _, r := range []modelserver.Request{a, o, g} {
		want.Add(r.Usage)
	}
	if got := srv.Served(); got != want {
		t.Errorf("served %+v, want %+v (the side request left out)", got, want)
	}
	if by := srv.ServedByModel(); len(by) != 3 || by["gpt-x"] != o.Usage {
		t.Errorf("served by model %+v", by)
	}
}
