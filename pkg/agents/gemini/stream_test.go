package gemini

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
			Session: "c6b5a4d3-e2f1-4a0b-9c8d-7e6f5a4b3c2d", Model: "gemini-2.5-pro",
			User:      []string{"Fix the failing test in main.go"},
			Assistant: []string{"Let me read main.go first."},
			Tool:      "read_file", ToolInput: `{"absolute_path":"/home/user/project/main.go"}`,
			ToolOutput: "File not found: /home/user/project/main.go", ToolErr: true,
			Errors: []string{"Loop detected, stopping execution"},
			Status: "error", ResultErr: true, ResultText: "Reached max session turns for this session.",
			Usage: headless.Usage{Usage: usage.Usage{InputTokens: 4800, OutputTokens: 300, CacheReadTokens: 4000}, DurationMS: 2100},
			Raw:   2,
		},
		{
			File:    "testdata/stream_ok.jsonl",
			Session: "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d", Model: "gemini-2.5-flash",
			User:      []string{"List the files"},
			Assistant: []string{"I'll list them.", "There are two files: README.md and main.go."},
			Tool:      "run_shell_command", ToolInput: `{"command":"ls","description":"List files"}`,
			ToolOutput: "README.md\nmain.go",
			Status:     "success",
			Usage:      headless.Usage{Usage: usage.Usage{InputTokens: 3800, OutputTokens: 150, CacheReadTokens: 1200}, DurationMS: 1900},
		},
	})
}

// TestLongLines checks lines beyond bufio.Scanner's 64 KiB default, and that kept output is bounded.
func TestLongLines(t *testing.T) {
	big := strings.Repeat("x", 150<<10)
	stream := `{"type":"tool_result","tool_id":"t1","status":"success","output":"` + big + `"}` + "\n" +
		"not json " + big + "\n" +
		`{"type":"result","status":"success","stats":{"input_tokens":1}}` + "\n"
	tr, err := headless.Parsers{"gemini": Adapter().Parser}.ParseAll("gemini", strings.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Events) != 3 {
		t.Fatalf("events = %d, want 3", len(tr.Events))
	}
	kept := len(headless.Truncate(big))
	if out := tr.Events[0].Output; kept >= len(big) || out != big[:kept] {
		t.Errorf("output length = %d, want %d", len(out), kept)
	}
	if tr.Raw != 1 || len(tr.Events[1].Raw) != kept {
		t.Errorf("raw = %d, raw length %d", tr.Raw, len(tr.Events[1].Raw))
	}
	if tr.Usage.InputTokens != 1 {
		t.Errorf("usage = %+v", tr.Usage)
	}
}

// TestFlush checks deltas still pending at the end of a stream are not lost, and raw lines do not split them.
func TestFlush(t *testing.T) {
	p := Adapter().Parser()
	var evs []headless.Event
	for _, l := range []string{
		`{"type":"message","role":"assistant","content":"half ","delta":true}`,
		"",
		"panic: boom",
		`{"type":"message","role":"assistant","content":"done","delta":true}`,
	} {
		evs = append(evs, p.Parse([]byte(l))...)
	}
	if len(evs) != 1 || evs[0].Kind != headless.KindRaw || evs[0].Raw != "panic: boom" {
		t.Fatalf("before flush = %+v", evs)
	}
	got := p.Flush()
	if len(got) != 1 || got[0].Kind != headless.KindAssistant || got[0].Text != "half done" {
		t.Errorf("flush = %+v", got)
	}
	if again := p.Flush(); len(again) != 0 {
		t.Errorf("second flush = %+v", again)
	}
}
