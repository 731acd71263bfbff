package headless

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// first returns the first event of kind k, or a zero Event.
func first(evs []Event, k Kind) Event {
	for _, e := range evs {
		if e.Kind == k {
			return e
		}
	}
	return Event{}
}

func texts(evs []Event, k Kind) []string {
	var out []string
	for _, e := range evs {
		if e.Kind == k {
			out = append(out, e.Text)
		}
	}
	return out
}

func TestFixtures(t *testing.T) {
	tests := []struct {
		file, format, session, model string
		assistant                    []string
		user                         []string
		tool, toolInput              string
		toolOutput                   string
		toolErr                      bool
		errors                       []string
		status, resultText           string
		resultErr                    bool
		usage                        Usage
		raw                          int
	}{
		{
			file: "claude.jsonl", format: "claude",
			session: "8f1c2a4e-3b7d-4e1a-9c55-0d2f6b7a9e10", model: "claude-sonnet-4-5-20250929",
			// The first message streamed as deltas and then arrived whole: it must appear once. The second
			// never got its complete message, so the deltas are emitted before the result.
			assistant: []string{"I'll run the tests.", "The test fails; "},
			tool:      "Bash", toolInput: `{"command":"go test ./...","description":"Run the test suite"}`,
			toolOutput: "--- FAIL: TestAdd (0.00s)\n    add_test.go:9: got 3, want 4\nFAIL", toolErr: true,
			status: "error_during_execution", resultErr: true,
			usage: Usage{InputTokens: 1200, OutputTokens: 310, CachedTokens: 15000, CacheWriteTokens: 3400, CostUSD: 0.0213, Turns: 2, DurationMS: 18342},
			raw:   2,
		},
		{
			file: "claude_ok.jsonl", format: "claude",
			session: "2d9e0f4a-77c1-4b6e-a0b3-5e8d1c2f3a40", model: "claude-opus-4-1-20250805",
			assistant: []string{"Let me look at README.md.\nThen I'll fix the typo.", "Fixed the typo in README.md."},
			tool:      "Read", toolInput: `{"file_path":"/home/user/project/README.md"}`,
			toolOutput: "     1\t# Acme\n     2\tTeh tool.",
			status:     "success", resultText: "Fixed the typo in README.md.",
			usage: Usage{InputTokens: 36, OutputTokens: 114, CachedTokens: 21000, CacheWriteTokens: 5200, CostUSD: 0.0411, Turns: 4, DurationMS: 9120},
		},
		{
			file: "codex.jsonl", format: "codex",
			session:   "0199a213-81c0-7800-8aa1-bbab2a035a53",
			assistant: []string{"TestAdd fails; looking at calc.go next."},
			tool:      "shell", toolInput: "bash -lc 'go test ./...'",
			toolOutput: "--- FAIL: TestAdd (0.00s)\nFAIL\tacme/calc\t0.003s\n", toolErr: true,
			errors: []string{"Reconnecting... 1/5"},
			status: "failed", resultErr: true,
			resultText: "stream disconnected before completion: idle timeout waiting for SSE",
			usage:      Usage{Turns: 1},
			raw:        2,
		},
		{
			file: "codex_ok.jsonl", format: "codex",
			session:   "0199b7f0-1c2d-7e3f-9a4b-5c6d7e8f9a0b",
			assistant: []string{"Fixed Add in calc.go and noted it in NOTES.md."},
			tool:      "shell", toolInput: "bash -lc ls",
			toolOutput: "README.md\ncalc.go\ncalc_test.go\n",
			status:     "success",
			usage:      Usage{InputTokens: 315, OutputTokens: 122, CachedTokens: 24448, Turns: 1},
		},
		{
			file: "gemini.jsonl", format: "gemini",
			session: "c6b5a4d3-e2f1-4a0b-9c8d-7e6f5a4b3c2d", model: "gemini-2.5-pro",
			user:      []string{"Fix the failing test in main.go"},
			assistant: []string{"Let me read main.go first."},
			tool:      "read_file", toolInput: `{"absolute_path":"/home/user/project/main.go"}`,
			toolOutput: "File not found: /home/user/project/main.go", toolErr: true,
			errors: []string{"Loop detected, stopping execution"},
			status: "error", resultErr: true, resultText: "Reached max session turns for this session.",
			usage: Usage{InputTokens: 4800, OutputTokens: 300, CachedTokens: 4000, DurationMS: 2100},
			raw:   2,
		},
		{
			file: "gemini_ok.jsonl", format: "gemini",
			session: "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d", model: "gemini-2.5-flash",
			user:      []string{"List the files"},
			assistant: []string{"I'll list them.", "There are two files: README.md and main.go."},
			tool:      "run_shell_command", toolInput: `{"command":"ls","description":"List files"}`,
			toolOutput: "README.md\nmain.go",
			status:     "success",
			usage:      Usage{InputTokens: 3800, OutputTokens: 150, CachedTokens: 1200, DurationMS: 1900},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			tr, err := ParseAll(tt.format, f)
			if err != nil {
				t.Fatal(err)
			}
			evs := tr.Events
			if tr.SessionID != tt.session {
				t.Errorf("SessionID = %q, want %q", tr.SessionID, tt.session)
			}
			if init := first(evs, KindInit); init.Model != tt.model || init.SessionID != tt.session {
				t.Errorf("init = %+v", init)
			}
			if got := texts(evs, KindAssistant); !reflect.DeepEqual(got, tt.assistant) {
				t.Errorf("assistant = %q, want %q", got, tt.assistant)
			}
			if got := texts(evs, KindUser); !reflect.DeepEqual(got, tt.user) {
				t.Errorf("user = %q, want %q", got, tt.user)
			}
			if got := texts(evs, KindError); !reflect.DeepEqual(got, tt.errors) {
				t.Errorf("errors = %q, want %q", got, tt.errors)
			}
			call := first(evs, KindToolCall)
			if call.Tool != tt.tool || call.Input != tt.toolInput || call.ToolID == "" {
				t.Errorf("tool call = %+v, want %s %s", call, tt.tool, tt.toolInput)
			}
			res := first(evs, KindToolResult)
			if res.ToolID != call.ToolID || res.Output != tt.toolOutput || res.IsError != tt.toolErr {
				t.Errorf("tool result = %+v, want id %s output %q error %v", res, call.ToolID, tt.toolOutput, tt.toolErr)
			}
			r := first(evs, KindResult)
			if r.Status != tt.status || r.IsError != tt.resultErr || r.Text != tt.resultText {
				t.Errorf("result = %+v, want status %q error %v text %q", r, tt.status, tt.resultErr, tt.resultText)
			}
			if tr.Usage != tt.usage {
				t.Errorf("usage = %+v, want %+v", tr.Usage, tt.usage)
			}
			if tr.Raw != tt.raw {
				t.Errorf("Raw = %d, want %d", tr.Raw, tt.raw)
			}
			if last := evs[len(evs)-1]; last.Kind != KindResult {
				t.Errorf("last event = %+v, want the result", last)
			}
		})
	}
}

// TestCodexExtraItems checks the items only codex has: file changes and MCP tool calls.
func TestCodexExtraItems(t *testing.T) {
	f, err := os.Open("testdata/codex_ok.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := ParseAll("codex", f)
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	for _, e := range tr.Events {
		if e.Kind == KindToolCall {
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
	var mcp Event
	for _, e := range tr.Events {
		if e.Kind == KindToolResult && e.ToolID == "item_3" {
			mcp = e
		}
	}
	if mcp.IsError || mcp.Output != `{"content":[{"type":"text","text":"ok"}]}` {
		t.Errorf("mcp result = %+v", mcp)
	}
}

// TestLongLines checks lines beyond bufio.Scanner's 64 KiB default, and that kept output is bounded.
func TestLongLines(t *testing.T) {
	big := strings.Repeat("x", 150<<10)
	stream := `{"type":"tool_result","tool_id":"t1","status":"success","output":"` + big + `"}` + "\n" +
		"not json " + big + "\n" +
		`{"type":"result","status":"success","stats":{"input_tokens":1}}` + "\n"
	tr, err := ParseAll("gemini", strings.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Events) != 3 {
		t.Fatalf("events = %d, want 3", len(tr.Events))
	}
	if out := tr.Events[0].Output; len(out) != maxOutput || out != big[:maxOutput] {
		t.Errorf("output length = %d, want %d", len(out), maxOutput)
	}
	if tr.Raw != 1 || len(tr.Events[1].Raw) != maxOutput {
		t.Errorf("raw = %d, raw length %d", tr.Raw, len(tr.Events[1].Raw))
	}
	if tr.Usage.InputTokens != 1 {
		t.Errorf("usage = %+v", tr.Usage)
	}
}

// TestFlush checks deltas still pending at the end of a stream are not lost, and raw lines do not split them.
func TestFlush(t *testing.T) {
	p, err := NewParser("gemini")
	if err != nil {
		t.Fatal(err)
	}
	var evs []Event
	for _, l := range []string{
		`{"type":"message","role":"assistant","content":"half ","delta":true}`,
		"",
		"panic: boom",
		`{"type":"message","role":"assistant","content":"done","delta":true}`,
	} {
		evs = append(evs, p.Parse([]byte(l))...)
	}
	if len(evs) != 1 || evs[0].Kind != KindRaw || evs[0].Raw != "panic: boom" {
		t.Fatalf("before flush = %+v", evs)
	}
	got := p.Flush()
	if len(got) != 1 || got[0].Kind != KindAssistant || got[0].Text != "half done" {
		t.Errorf("flush = %+v", got)
	}
	if again := p.Flush(); len(again) != 0 {
		t.Errorf("second flush = %+v", again)
	}
}

func TestUnknownFormat(t *testing.T) {
	if _, err := NewParser("aider"); err == nil {
		t.Error("NewParser(aider) succeeded")
	}
	if _, err := ParseAll("aider", strings.NewReader("")); err == nil {
		t.Error("ParseAll(aider) succeeded")
	}
}

func TestTruncateKeepsUTF8(t *testing.T) {
	s := strings.Repeat("é", maxOutput) // 2 bytes a rune, so the cut lands mid-rune
	s = "a" + s
	got := truncate(s)
	if len(got) > maxOutput || !strings.HasPrefix(s, got) || !utf8.ValidString(got) {
		t.Errorf("truncate: len %d", len(got))
	}
}

// TestResumedTurnsInOneTranscript: ace appends every turn of a conversation to one file; the totals add up and
// the session is the first one named.
func TestResumedTurnsInOneTranscript(t *testing.T) {
	for _, name := range []string{"claude_ok.jsonl", "codex_ok.jsonl", "gemini_ok.jsonl"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		format := strings.TrimSuffix(strings.TrimSuffix(name, ".jsonl"), "_ok")
		one, _ := ParseAll(format, strings.NewReader(string(b)))
		two, err := ParseAll(format, strings.NewReader(string(b)+string(b)))
		if err != nil {
			t.Fatal(err)
		}
		want := one.Usage
		want.add(&one.Usage)
		if len(two.Events) != 2*len(one.Events) || two.Usage != want || two.SessionID != one.SessionID {
			t.Errorf("%s: %d events usage %+v session %q; one turn: %d events usage %+v", name, len(two.Events),
				two.Usage, two.SessionID, len(one.Events), one.Usage)
		}
	}
}
