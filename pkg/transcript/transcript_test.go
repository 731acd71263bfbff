package transcript

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aceworks/ace/pkg/store"
)

func TestOfTellsTheRunnersApart(t *testing.T) {
	root := t.TempDir()
	if _, ok := Of(root, &store.Run{}); ok {
		t.Fatal("a run without a session or conversation has a transcript")
	}
	tm, ok := Of(root, &store.Run{Session: "ace-w-1"})
	if !ok || tm.Headless() || tm.Path != filepath.Join(root, "logs", "ace-w-1.log") {
		t.Fatalf("tmux run: %+v %v", tm, ok)
	}
	h, ok := Of(root, &store.Run{State: store.RunState{ExecState: store.ExecState{Transcript: "/t.jsonl", ExecFormat: "claude"}}})
	if !ok || !h.Headless() || h.Path != "/t.jsonl" {
		t.Fatalf("headless run: %+v %v", h, ok)
	}
}

func TestTailOfATerminalLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.log")
	var b strings.Builder
	for i := 0; i < 2000; i++ {
		b.WriteString("\x1b[2K\r⠋ working\r\n") // a spinner redrawn: one line in the tail
	}
	b.WriteString("\x1b[1mdone\x1b[0m: wrote hello.txt\r\n")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Transcript{Path: path}.Tail(1 << 10)
	if err != nil {
		t.Fatal(err)
	}
	if got != "⠋ working\ndone: wrote hello.txt" {
		t.Fatalf("tail = %q", got)
	}
	if _, err := (Transcript{Path: path + ".none"}).Tail(10); !Missing(err) {
		t.Fatalf("a missing log: %v", err)
	}
}

func TestTailAndCopyOfAnEventStream(t *testing.T) {
	path, err := filepath.Abs("../agents/claude/testdata/stream_ok.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	tr := Transcript{Path: path, Format: "claude"}
	tail, err := tr.Tail(64 << 10)
	if err != nil || tail == "" || strings.Contains(tail, `{"type"`) {
		t.Fatalf("tail = %q, %v: want rendered events", tail, err)
	}
	var out bytes.Buffer
	if err := tr.Copy(context.Background(), &out, false, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), lastLine(tail)) {
		t.Fatalf("ace logs and the tail disagree:\n%s\n---\n%s", out.String(), tail)
	}
	var js bytes.Buffer
	if err := tr.Copy(context.Background(), &js, false, true); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(js.String(), `{"`) {
		t.Fatalf("--json: %q", js.String())
	}
	if err := (Transcript{Path: path}).Copy(context.Background(), &js, false, true); err == nil {
		t.Fatal("--json on a terminal log: no error")
	}
}

func TestLastNeverCutsARune(t *testing.T) {
	if got := Last("ab\nçé", 3); got != "é" {
		t.Fatalf("Last = %q", got)
	}
	if got := Last("line one\nline two", 12); got != "line two" {
		t.Fatalf("Last = %q", got)
	}
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	return s[strings.LastIndexByte(s, '\n')+1:]
}
