package livehost

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aceworks/ace/pkg/headless"
	"github.com/aceworks/ace/pkg/sanitize"
)

// ANSI colours: a little, for a human telling the agent's words from ace's and the tools'.
const (
	reset  = "\x1b[0m"
	bold   = "\x1b[1m"
	dim    = "\x1b[2m"
	red    = "\x1b[31m"
	green  = "\x1b[32m"
	yellow = "\x1b[33m"
	cyan   = "\x1b[36m"
)

// Render writes r for a person reading the pane (or `ace logs`): who said what, a tool call and its result
// folded to a line or a few, a permission or question with its options, a turn's end with what it spent. color
// adds ANSI colours. What the agent wrote is shown without its escape sequences and control characters: a file
// the agent printed must not drive the human's terminal. Records without a rendering (none yet) write nothing.
func Render(w io.Writer, r Record, color bool) error {
	r = clean(r)
	p := func(c, s string) string { return paint(color, c, s) }
	var s string
	switch r.Kind {
	case KindSession:
		s = p(dim, "── session "+r.SessionID)
	case KindUser:
		who := "ace"
		if r.From == FromTerminal {
			who = "you"
		}
		s = p(bold+cyan, "▶ "+who+": ") + indent(r.Text)
	case KindText:
		s = p(bold, "● ") + indent(r.Text)
	case KindToolCall:
		s = p(dim, "  → "+oneLine(r.Tool+" "+r.Input, 160))
	case KindToolResult:
		s = p(dim, "  ← "+result(r))
	case KindPermission:
		s = p(bold+yellow, "? permission "+r.ID+": ") + oneLine(r.Tool+" "+r.Input, 200)
		if r.Text != "" {
			s += "\n  " + indent(r.Text)
		}
	case KindQuestion:
		s = p(bold+yellow, "? question "+r.ID+": ") + indent(r.Text)
		for i, o := range r.Options {
			s += fmt.Sprintf("\n  %d. %s", i+1, o)
		}
	case KindAnswered:
		s = answered(r, p)
	case KindWithdrawn:
		s = p(dim, "  ✗ withdrawn: the agent no longer waits for an answer to "+r.ID)
	case KindTurnDone:
		s = turnDone(r, p)
	case KindLimit:
		s = "⏸ usage limit: " + r.Text
		if !r.ResetsAt.IsZero() {
			s += " (resets " + r.ResetsAt.Local().Format(time.DateTime) + ")"
		}
		s = p(yellow, s)
	case KindError:
		s = p(red, "! error: ") + indent(r.Text)
	case KindRetry:
		s = p(yellow, "↻ the agent retries its model's API"+headless.RetryAttempt(r.Attempt, r.Max))
		if r.Text != "" {
			s += ": " + indent(r.Text)
		}
	case KindExit:
		s = p(bold, fmt.Sprintf("■ the agent exited (code %d)", r.Code))
		if r.Text != "" {
			s += "\n" + p(dim, "  "+indent(r.Text))
		}
	case KindHandshakeFailed:
		s = p(bold+red, "✗ the agent does not speak its protocol: ") + indent(r.Text)
	default:
		return nil
	}
	_, err := io.WriteString(w, s+"\n")
	return err
}

func answered(r Record, p func(c, s string) string) string {
	by := " (" + r.From + ")"
	switch {
	case r.Allow != nil && *r.Allow:
		return p(green, "  ✓ allowed"+by)
	case r.Allow != nil:
		return p(red, "  ✗ denied"+by)
	}
	return p(green, "  ✓ answered"+by+": ") + indent(r.Text)
}

func turnDone(r Record, p func(c, s string) string) string {
	s := "■ turn " + r.Status
	if u := r.Usage; u != nil {
		s += fmt.Sprintf(" · %d in · %d out", u.InputTokens, u.OutputTokens)
		if u.CacheReadTokens > 0 {
			s += fmt.Sprintf(" · %d cached", u.CacheReadTokens)
		}
		if u.CacheWriteTokens > 0 {
			s += fmt.Sprintf(" · %d cache write", u.CacheWriteTokens)
		}
	}
	if r.Text != "" {
		return p(red, s+": ") + indent(r.Text)
	}
	return p(dim, s)
}

// result is a tool result folded: its first lines and how many more there are.
func result(r Record) string {
	mark := "ok"
	if r.IsError {
		mark = "error"
	}
	out := strings.TrimSpace(r.Text)
	if out == "" {
		return mark
	}
	lines := strings.Split(out, "\n")
	shown := lines[:min(len(lines), 3)]
	for i, l := range shown {
		shown[i] = oneLine(l, 140)
	}
	s := mark + ": " + strings.Join(shown, "\n    ")
	if more := len(lines) - len(shown); more > 0 {
		s += fmt.Sprintf("\n    … (+%d lines)", more)
	}
	return s
}

func paint(color bool, c, s string) string {
	if !color || s == "" {
		return s
	}
	return c + s + reset
}

// indent keeps a multi-line text under the label its first line follows.
func indent(s string) string { return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ") }

// oneLine folds s to one line of at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// clean is r with its text fields safe for a terminal.
func clean(r Record) Record {
	for _, f := range []*string{&r.Text, &r.From, &r.ID, &r.Tool, &r.Input, &r.Status, &r.SessionID} {
		*f = sanitize.Clean(*f)
	}
	opts := make([]string, len(r.Options))
	for i, o := range r.Options {
		opts[i] = sanitize.Clean(o)
	}
	r.Options = opts
	return r
}
