// Package livetest holds the real-CLI tests every live adapter passes, run against each pinned version of its
// CLI in a loopback-only namespace on a fresh HOME (internal/realcli) with the scripted model server.
package livetest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/realcli"
	"github.com/aceworks/ace/pkg/live"
	"github.com/aceworks/ace/pkg/modelserver"
)

// Case is how one CLI runs in these tests.
type Case struct {
	CLI string // claude, codex or gemini
	// Argv is the command before the adapter's own flags: the pinned binary and the user's flags.
	Argv func(bin string) []string
	// Home adjusts the fresh HOME (variables, files) before the CLI starts; nil for none.
	Home  func(t *testing.T, h *realcli.Home, dir string)
	Start func(ctx context.Context, opts live.Options) (live.Conversation, error)
	// PromptOnly: the protocol reports every input token as input, cached or not (gemini).
	PromptOnly bool
}

// The two user messages carry what a shell or a template would mangle: they must reach the model byte-exact.
const (
	Prompt1 = "Turn one: read IN.txt, then write OUT.txt. Keep \"quotes\", $HOME and `ticks` literal."
	Prompt2 = "Turn two, while you are still running: a \\ backslash and 'single' quotes."
	// inContent is the file turn 1 reads; outContent the file it writes after asking permission.
	inContent  = "the input the model reads\n"
	outContent = "written after the human allowed it\nline \"two\" with $HOME\n"
)

// turn is what one turn showed.
type turn struct {
	events []live.Event
	done   live.TurnDone
}

// TwoTurns holds a two-turn conversation with one CLI process for each pinned version of cs.CLI: turn 1 reads a
// file with the CLI's file tool and writes another, the write asking for permission, which is allowed through
// the protocol; turn 2 is a second user message to the same live process. It checks the events, the file, the
// messages at the model byte for byte, and each turn's usage against what the model server billed for it.
func TwoTurns(t *testing.T, cs Case) {
	for _, c := range realcli.Pinned(t, cs.CLI) {
		t.Run(c.Label(), func(t *testing.T) {
			t.Parallel()
			realcli.Require(t, c)
			if !realcli.Enter(t) {
				return
			}
			twoTurns(t, cs, c)
		})
	}
}

func twoTurns(t *testing.T, cs Case, c realcli.CLI) {
	dir := gitRepo(t)
	if err := os.WriteFile(filepath.Join(dir, "IN.txt"), []byte(inContent), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := modelserver.Start(t, modelserver.Scenario{Dir: dir, Turns: []modelserver.Turn{
		modelserver.ReadFile("IN.txt"),
		modelserver.WriteFile("OUT.txt", outContent),
		modelserver.Text("Turn one done."),
		modelserver.Text("Turn two answer."),
	}})
	h := realcli.NewHome(t, c, srv.URL())
	if cs.Home != nil {
		cs.Home(t, h, dir)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	begin := time.Now()
	conv, err := cs.Start(ctx, live.Options{Argv: cs.Argv(c.Bin), Env: h.Env, Dir: dir})
	if err != nil {
		t.Fatalf("start %s: %v", c.Label(), err)
	}
	t.Logf("%s: handshake took %s, session %s", c.Label(), time.Since(begin).Round(time.Millisecond), conv.SessionID())
	closed := false
	defer func() {
		if !closed {
			_ = conv.Close()
		}
		if t.Failed() {
			for i, r := range srv.Requests() {
				t.Logf("request %d: %s %s status=%d side=%v turn=%d users=%q", i, r.Method, r.Path, r.Status, r.Side, r.Turn, r.UserTexts)
			}
		}
	}()
	if conv.SessionID() == "" {
		t.Errorf("no session ID after the handshake")
	}

	// Turn 1: the write asks for permission, allowed here.
	start := time.Now()
	if err := conv.Send(ctx, Prompt1); err != nil {
		t.Fatalf("send turn 1: %v", err)
	}
	t1 := await(ctx, t, conv, func(p live.Permission) {
		if !strings.Contains(p.Input, "OUT.txt") && !strings.Contains(p.Title, "OUT.txt") {
			t.Errorf("permission for %s %q %q: not the write of OUT.txt", p.Tool, p.Title, p.Input)
		}
		if err := p.Allow(ctx); err != nil {
			t.Errorf("allow: %v", err)
		}
		if err := p.Allow(ctx); err == nil {
			t.Errorf("a second answer to the same permission request was taken")
		}
	})
	t.Logf("turn 1 took %s: %s", time.Since(start).Round(time.Millisecond), summary(t1.events))
	if got, err := os.ReadFile(filepath.Join(dir, "OUT.txt")); err != nil || string(got) != outContent {
		t.Errorf("OUT.txt = %q, %v; want %q", got, err, outContent)
	}
	check(t, "turn 1", t1, 1, 2, "Turn one done.")

	// Turn 2: a second user message to the same process.
	start = time.Now()
	if err := conv.Send(ctx, Prompt2); err != nil {
		t.Fatalf("send turn 2: %v", err)
	}
	t2 := await(ctx, t, conv, func(p live.Permission) {
		t.Errorf("turn 2 asked for permission for %s %q", p.Tool, p.Input)
		_ = p.Deny(ctx, "not in this test")
	})
	t.Logf("turn 2 took %s: %s", time.Since(start).Round(time.Millisecond), summary(t2.events))
	check(t, "turn 2", t2, 0, 0, "Turn two answer.")

	for _, p := range []string{Prompt1, Prompt2} {
		if !srv.SawUserText(p) {
			t.Errorf("the model did not get %q byte-exact; user texts: %q", p, srv.UserTexts())
		}
	}
	// Each turn's usage is what the server billed for the scripted requests of that turn (turns 0-2, then 3).
	var billed [2]modelserver.Usage
	for _, r := range srv.ModelRequests() {
		switch {
		case r.Turn >= 0 && r.Turn <= 2:
			billed[0].Add(r.Usage)
		case r.Turn == 3:
			billed[1].Add(r.Usage)
		}
	}
	for i, tn := range []turn{t1, t2} {
		want := live.Usage{InputTokens: billed[i].InputTokens, OutputTokens: billed[i].OutputTokens,
			CachedTokens: billed[i].CacheReadTokens, CacheWriteTokens: billed[i].CacheWriteTokens}
		if cs.PromptOnly {
			want = live.Usage{InputTokens: billed[i].Prompt(), OutputTokens: billed[i].OutputTokens}
		}
		if tn.done.Usage != want {
			t.Errorf("turn %d usage = %+v, the server billed %+v", i+1, tn.done.Usage, want)
		}
	}

	closed = true
	if err := conv.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	t.Logf("%s: whole conversation %s", c.Label(), time.Since(begin).Round(time.Millisecond))
}

// await collects events until the turn ends, answering permission requests with allow.
func await(ctx context.Context, t *testing.T, conv live.Conversation, allow func(live.Permission)) turn {
	t.Helper()
	var tn turn
	for {
		select {
		case e, ok := <-conv.Events():
			if !ok {
				t.Fatalf("the events ended before the turn did: %s", summary(tn.events))
			}
			tn.events = append(tn.events, e)
			switch e := e.(type) {
			case live.Permission:
				allow(e)
			case live.Question:
				t.Errorf("unexpected question %+v", e.Asks)
			case live.Exit:
				t.Fatalf("the CLI exited mid-turn: %v\n%s", e.Err, e.Stderr)
			case live.TurnDone:
				tn.done = e
				return tn
			}
		case <-ctx.Done():
			t.Fatalf("no end of turn: %v; events so far: %s", ctx.Err(), summary(tn.events))
		}
	}
}

// check asserts a turn's events: permissions asked, tool calls at least, the final text, no error.
func check(t *testing.T, name string, tn turn, permissions, minTools int, text string) {
	t.Helper()
	var perms, tools int
	var texts []string
	for _, e := range tn.events {
		switch e := e.(type) {
		case live.Permission:
			perms++
		case live.ToolCall:
			tools++
		case live.Text:
			texts = append(texts, e.Text)
		case live.Limit, live.Error:
			t.Errorf("%s: %#v", name, e)
		}
	}
	if perms != permissions {
		t.Errorf("%s: %d permission requests, want %d", name, perms, permissions)
	}
	if tools < minTools {
		t.Errorf("%s: %d tool calls, want at least %d", name, tools, minTools)
	}
	if len(texts) == 0 || texts[len(texts)-1] != text {
		t.Errorf("%s: texts %q, want the last to be %q", name, texts, text)
	}
	if tn.done.Err != "" {
		t.Errorf("%s failed: %s", name, tn.done.Err)
	}
}

func summary(events []live.Event) string {
	var parts []string
	for _, e := range events {
		switch e := e.(type) {
		case live.Text:
			parts = append(parts, "text "+trim(e.Text))
		case live.ToolCall:
			parts = append(parts, "tool "+e.Name+" "+trim(e.Input))
		case live.ToolResult:
			parts = append(parts, "result "+e.ID+" "+trim(e.Output))
		case live.Permission:
			parts = append(parts, "permission "+e.Tool+" "+trim(e.Input))
		case live.Question:
			parts = append(parts, "question")
		case live.Limit:
			parts = append(parts, "limit "+trim(e.Message))
		case live.Error:
			parts = append(parts, "error "+trim(e.Message))
		case live.TurnDone:
			parts = append(parts, "done "+e.Stop)
		case live.Exit:
			parts = append(parts, "exit")
		}
	}
	return strings.Join(parts, " | ")
}

func trim(s string) string {
	s = strings.ReplaceAll(s, "\n", "⏎")
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// gitRepo makes a git repository with one commit: the agents run in a working copy.
func gitRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "--allow-empty", "-m", "init"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}
