package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/testkit"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
)

// TestLogsFollowHeadless follows a headless transcript as its agent appends to it, including a line written in
// two pieces, and ends with the totals when interrupted.
func TestLogsFollowHeadless(t *testing.T) {
	root := t.TempDir()
	cfg := config.Default()
	cfg.Workspace.Root = root
	transcript := filepath.Join(root, "logs", "claude", "s1.jsonl")
	if err := os.MkdirAll(filepath.Dir(transcript), 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(s string) {
		f, err := os.OpenFile(transcript, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"type":"system","subtype":"init","session_id":"s1","model":"m"}` + "\n" +
		`{"type":"assistant","message":{"content":[{"type":"text","text":"first"}]}}` + "\n")
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(root, "ace.db"))
	if err != nil {
		t.Fatal(err)
	}
	err = st.CreateRun(ctx, &store.Run{Repo: "acme/widgets", Issue: 7, Attempt: 1, Agent: "claude", Runner: "exec",
		Step: "monitor", Status: store.StatusActive, State: store.RunState{ExecState: store.ExecState{Transcript: transcript, ExecFormat: "claude"}}})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	out := &testkit.Buffer{}
	app := &App{Config: cfg, Stdout: out, Stderr: out}
	fctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- runLogs(fctx, app, "", 7, true, false) }()
	waitFor := func(s string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second) // bounds a hung test only
		for !strings.Contains(out.String(), s) {
			if time.Now().After(deadline) {
				cancel()
				t.Fatalf("never printed %q; output:\n%s", s, out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("agent: first")
	write(`{"type":"assistant","message":{"content":[{"type":"text","text":"sec`)
	write(`ond"}]}}` + "\n" + `{"type":"result","subtype":"success","usage":{"input_tokens":3,"output_tokens":4}}` + "\n")
	waitFor("■ turn ended: success")
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := "── session s1 (model m)\nagent: first\nagent: second\n■ turn ended: success (3 in, 4 out tokens)\n" +
		"tokens: 3 in, 4 out, 0 cached · 1 turn(s)\n"
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
	}
}
