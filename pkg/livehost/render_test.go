package livehost

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/tmuxops"
	"github.com/aceworks/ace/pkg/usage"
)

// A conversation as the pane shows it, against testdata/conversation.txt (ACE_RECORD_RENDER=1 writes it again:
// review the diff). With colour, the same words stand between escape sequences.
func TestRender(t *testing.T) {
	yes, no := true, false
	recs := []Record{
		{Kind: KindSession, SessionID: "0a1b2c"},
		{Kind: KindUser, From: FromAce, Text: "Read IN.txt, then write OUT.txt.\nKeep \"quotes\"."},
		{Kind: KindText, Text: "I'll read the file first."},
		{Kind: KindToolCall, ID: "t1", Tool: "Read", Input: `{"file_path":"/repo/IN.txt"}`},
		{Kind: KindToolResult, ID: "t1", Text: "line 1\nline 2\nline 3\nline 4\nline 5"},
		{Kind: KindPermission, ID: "t2", Tool: "Write", Input: `{"file_path":"/repo/OUT.txt","content":"x"}`, Text: "Write OUT.txt"},
		{Kind: KindAnswered, ID: "t2", From: FromTerminal, Allow: &yes},
		{Kind: KindToolResult, ID: "t2", Text: "permission denied", IsError: true},
		{Kind: KindToolResult, ID: "t4", Text: "\x1b]0;a title\x07\x1b[2J\x1b[31mwhat cat printed\x1b[0m\r"},
		{Kind: KindQuestion, ID: "q1", Text: "Which colour should the button be?", Options: []string{"Red", "Blue"}},
		{Kind: KindAnswered, ID: "q1", From: FromAce, Text: "Teal"},
		{Kind: KindAnswered, ID: "t3", From: FromAutoApprove, Allow: &no},
		{Kind: KindTurnDone, Status: "completed", Usage: &usage.Usage{InputTokens: 1200, OutputTokens: 85, CacheReadTokens: 300}},
		{Kind: KindUser, From: FromTerminal, Text: "and now?"},
		{Kind: KindLimit, Text: "You've hit your limit", ResetsAt: time.Date(2026, 1, 2, 15, 4, 0, 0, time.Local)},
		{Kind: KindTurnDone, Status: "failed", Text: "usage limit", Usage: &usage.Usage{}},
		{Kind: KindError, Text: "API error 529 (overloaded), retry 1 of 10 (the agent retries)"},
		{Kind: KindExit, Code: 1, Text: "trace 1\ntrace 2\nError: boom"},
		{Kind: KindHandshakeFailed, Text: "claude: live: protocol handshake failed: initialize: timed out"},
	}
	var plain, colored strings.Builder
	for _, r := range recs {
		if err := Render(&plain, r, false); err != nil {
			t.Fatal(err)
		}
		_ = Render(&colored, r, true)
	}
	golden := filepath.Join("testdata", "conversation.txt")
	if os.Getenv("ACE_RECORD_RENDER") != "" {
		if err := os.WriteFile(golden, []byte(plain.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if plain.String() != string(want) {
		t.Errorf("rendered:\n%s\nwant (%s):\n%s", plain.String(), golden, want)
	}
	if got := tmuxops.StripANSI(colored.String()); got != plain.String() {
		t.Errorf("with colour, other words:\n%s", got)
	}
	if !strings.Contains(colored.String(), "\x1b[") {
		t.Errorf("no colour")
	}
}
