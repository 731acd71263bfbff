package codex

import (
	"reflect"
	"testing"

	"github.com/aceworks/ace/pkg/headless"
	"github.com/aceworks/ace/pkg/headless/headlesstest"
	"github.com/aceworks/ace/pkg/usage"
)

func TestStreamFixtures(t *testing.T) {
	headlesstest.Check(t, Adapter().Parser, []headlesstest.Fixture{
		{
			File:      "testdata/stream.jsonl",
			Session:   "0199a213-81c0-7800-8aa1-bbab2a035a53",
			Assistant: []string{"TestAdd fails; looking at calc.go next."},
			Tool:      "shell", ToolInput: "bash -lc 'go test ./...'",
			ToolOutput: "--- FAIL: TestAdd (0.00s)\nFAIL\tacme/calc\t0.003s\n", ToolErr: true,
			Retries: []string{"1/5"},
			Status:  "failed", ResultErr: true,
			ResultText: "stream disconnected before completion: idle timeout waiting for SSE",
			Usage:      headless.Usage{Turns: 1},
			Raw:        2,
		},
		{
			File:      "testdata/stream_ok.jsonl",
			Session:   "0199b7f0-1c2d-7e3f-9a4b-5c6d7e8f9a0b",
			Assistant: []string{"Fixed Add in calc.go and noted it in NOTES.md."},
			Tool:      "shell", ToolInput: "bash -lc ls",
			ToolOutput: "README.md\ncalc.go\ncalc_test.go\n",
			Status:     "success",
			Usage:      headless.Usage{Usage: usage.Usage{InputTokens: 315, OutputTokens: 122, CacheReadTokens: 24448}, Turns: 1},
		},
	})
}

// TestExtraItems checks the items only codex has: file changes and MCP tool calls.
func TestExtraItems(t *testing.T) {
	tr := headlesstest.Parse(t, Adapter().Parser, "testdata/stream_ok.jsonl")
	var calls []string
	for _, e := range tr.Events {
		if e.Kind == headless.KindToolCall {
			calls = append(calls, e.Tool+" "+e.Input)
		}
	}
	want := []string{
		"shell bash -lc ls",
		"file_change /home/user/project/calc.go\n/home/user/project/NOTES.md",
		`tracker.update_issue {"id":42,"state":"done"}`,
	}
	if !reflect.DeepEqual(calls, want) {
		t.Errorf("calls = %q, want %q", calls, want)
	}
	var mcp headless.Event
	for _, e := range tr.Events {
		if e.Kind == headless.KindToolResult && e.ToolID == "item_3" {
			mcp = e
		}
	}
	if mcp.IsError || mcp.Output != `{"content":[{"type":"text","text":"ok"}]}` {
		t.Errorf("mcp result = %+v", mcp)
	}
}
