package agents

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func mustBuiltin(t *testing.T, name string) Profile {
	t.Helper()
	p, ok := Builtin(name)
	if !ok {
		t.Fatalf("no built-in %s", name)
	}
	return p
}

// Screens written from what the CLIs print against a scripted server answering the providers' 429 responses.
const (
	claudeLimitScreen = `> fix the bug in main.go

⏺ I'll look at main.go first.
  ⎿  You've hit your session limit · resets 7:17pm (UTC)

╭────────────────────────────────────────────────────────╮
│ What do you want to do?                                │
│                                                        │
│ ❯ 1. Stop and wait for limit to reset                  │
│   2. Upgrade your plan                                 │
│                                                        │
│ Enter to confirm · Esc to cancel                       │
╰────────────────────────────────────────────────────────╯
`
	claudeAPIKeyScreen = `> fix the bug
  ⎿  API Error: Request rejected (429) · rate_limit_error

────────────────────────────────
> 
────────────────────────────────
  ? for shortcuts
`
	codexLimitScreen = `› fix the bug

■ You’ve hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) or try again at 7:35 PM.

  Approaching rate limits
  Switch to gpt-5-codex-mini for lower credit usage?

› 1. Switch to gpt-5-codex-mini
  2. Keep current model
  3. Keep current model (never show again)

  Press enter to confirm or esc to go back
`
	geminiQuotaScreen = `✕ [API Error: You have exhausted your daily quota on this model.]

 Type your message or @path/to/file
`
)

func TestLimitOnScreen(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 3, 4, 18, 40, 0, 0, time.UTC)
	cases := []struct {
		agent, screen string
		want          time.Time // zero: no reset time given
		menu          string    // the option that keeps the user's choice; "" for no menu
	}{
		{"claude", claudeLimitScreen, time.Date(2025, 3, 4, 19, 17, 0, 0, time.UTC), "Stop and wait for limit to reset"},
		{"claude", claudeAPIKeyScreen, time.Time{}, ""},
		{"codex", codexLimitScreen, time.Date(2025, 3, 4, 19, 35, 0, 0, time.Local), "Keep current model"},
		{"gemini", geminiQuotaScreen, time.Time{}, ""},
	}
	for _, c := range cases {
		p := mustBuiltin(t, c.agent)
		// Codex prints local time: read "now" in the host's zone so that the expected day is today's.
		n := now
		if c.agent == "codex" {
			n = time.Date(2025, 3, 4, 18, 40, 0, 0, time.Local)
		}
		l, count, ok := p.LimitOnScreen(c.screen, n)
		if !ok || count != 1 {
			t.Errorf("%s: limit not found (ok %v, count %d) in\n%s", c.agent, ok, count, c.screen)
			continue
		}
		if !l.ResetsAt.Equal(c.want) {
			t.Errorf("%s: resets at %v, want %v (message %q)", c.agent, l.ResetsAt, c.want, l.Message)
		}
		d, ok := p.LimitMenu(c.screen)
		got := ""
		if m, found := ParseMenu(c.screen); ok && found && m.Find(d.Choose) >= 0 {
			got = m.Options[m.Find(d.Choose)].Text
		}
		if got != c.menu || ok != (c.menu != "") {
			t.Errorf("%s: limit menu answered %q (%v), want %q", c.agent, got, ok, c.menu)
		}
	}
	// An ordinary screen is no limit, and a custom agent has no patterns.
	if _, _, ok := mustBuiltin(t, "claude").LimitOnScreen("> hi\n  ? for shortcuts\n", now); ok {
		t.Error("limit found on an idle claude screen")
	}
	if _, _, ok := (Profile{Name: "custom"}).LimitOnScreen(claudeLimitScreen, now); ok {
		t.Error("a custom agent matched built-in limit patterns")
	}
}

func TestLimitCountsMessages(t *testing.T) {
	t.Parallel()
	p := mustBuiltin(t, "claude")
	now := time.Date(2025, 3, 4, 19, 17, 30, 0, time.UTC)
	screen := "  ⎿  You've hit your session limit · resets 7:17pm (UTC)\n> continue\n  ⎿  You've hit your session limit · resets 8:17pm (UTC)\n"
	l, count, ok := p.LimitOnScreen(screen, now)
	if !ok || count != 2 {
		t.Fatalf("count %d ok %v, want 2", count, ok)
	}
	if want := time.Date(2025, 3, 4, 20, 17, 0, 0, time.UTC); !l.ResetsAt.Equal(want) {
		t.Errorf("the last message should win: resets %v, want %v", l.ResetsAt, want)
	}
}

func TestLimitInStream(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 3, 4, 18, 40, 0, 0, time.UTC)
	cases := []struct {
		agent, text string
		exit        int
		want        bool
		reset       time.Time
	}{
		{"claude", "You've hit your session limit · resets 7:17pm (UTC)", 1, true, time.Date(2025, 3, 4, 19, 17, 0, 0, time.UTC)},
		{"claude", "You've hit your 5-hour limit · resets 7:17pm (UTC)", 1, true, time.Date(2025, 3, 4, 19, 17, 0, 0, time.UTC)},
		{"claude", "API Error: Request rejected (429) · rate_limit_error", 1, true, time.Time{}},
		{"claude", "API Error: 529 Overloaded", 1, true, time.Time{}},
		{"claude", "I fixed the bug.", 0, false, time.Time{}},
		{"codex", "You’ve hit your usage limit. Upgrade to Pro or try again at 7:35 PM.", 1, true, time.Time{}},
		{"codex", "unexpected status 429 Too Many Requests: usage_limit_reached", 1, true, time.Time{}},
		{"codex", "stream disconnected before completion", 1, false, time.Time{}},
		{"gemini", "You have exhausted your daily quota on this model.", 173, true, time.Time{}},
		{"gemini", "", 173, true, time.Time{}},
		{"gemini", "some other failure", 1, false, time.Time{}},
	}
	for _, c := range cases {
		l, ok := mustBuiltin(t, c.agent).LimitInStream(c.text, c.exit, now)
		if ok != c.want {
			t.Errorf("%s %q exit %d: limit %v, want %v", c.agent, c.text, c.exit, ok, c.want)
			continue
		}
		if c.agent != "codex" && !l.ResetsAt.Equal(c.reset) {
			t.Errorf("%s %q: resets %v, want %v", c.agent, c.text, l.ResetsAt, c.reset)
		}
		if c.agent == "codex" && ok && strings.Contains(c.text, "7:35") && l.ResetsAt.IsZero() {
			t.Errorf("codex: no reset time read from %q", c.text)
		}
	}
}

// TestClaude2_1_331Limit: the newest claude's 5-hour limit, as ace agents check recorded it, is a limit with
// its reset.
func TestClaude2_1_331Limit(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("testdata", "real", "claude-2.1.331", "31-limit.txt"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 25, 4, 40, 0, 0, time.UTC)
	l, _, ok := mustBuiltin(t, "claude").LimitOnScreen(string(b), now)
	if !ok || !l.ResetsAt.Equal(time.Date(2026, 11, 25, 5, 9, 0, 0, time.UTC)) {
		t.Errorf("limit %+v %v, want one resetting at 05:09 UTC", l, ok)
	}
}
