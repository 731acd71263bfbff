package headless

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"time"
)

// Render writes e for a person: who said what, a tool call or its result folded to one line.
func Render(w io.Writer, e Event) error {
	var s string
	switch e.Kind {
	case KindInit:
		s = "── session " + e.SessionID
		if e.Model != "" {
			s += " (model " + e.Model + ")"
		}
	case KindUser:
		s = block("user", e.Text)
	case KindAssistant:
		s = block("agent", e.Text)
	case KindToolCall:
		s = "  → " + oneLine(e.Tool+" "+e.Input, 160)
	case KindToolResult:
		mark := "ok"
		if e.IsError {
			mark = "error"
		}
		s = "  ← " + mark
		if out := strings.TrimSpace(e.Output); out != "" {
			s += ": " + oneLine(out, 140)
			if n := strings.Count(out, "\n"); n > 0 {
				s += fmt.Sprintf(" (+%d lines)", n)
			}
		}
	case KindResult:
		s = "■ turn ended: " + e.Status
		if e.Usage != nil {
			s += fmt.Sprintf(" (%d in, %d out tokens)", e.Usage.InputTokens, e.Usage.OutputTokens)
		}
		if e.IsError && e.Text != "" {
			s += "\n" + block("error", e.Text)
		}
	case KindError:
		s = block("error", e.Text)
	case KindLimit:
		s = "⏸ usage limit: " + e.Text
		if e.ResetsAt > 0 {
			s += " (resets " + time.Unix(e.ResetsAt, 0).UTC().Format(time.RFC3339) + ")"
		}
	case KindRetry:
		s = "↻ retrying the model's API" + RetryAttempt(e.Attempt, e.MaxAttempts)
		if e.Text != "" {
			s += ": " + oneLine(e.Text, 160)
		}
	case KindRaw:
		s = "  ? " + oneLine(e.Raw, 160)
	default:
		return nil
	}
	_, err := io.WriteString(w, s+"\n")
	return err
}

// RenderTotals writes the closing line of a rendered transcript: tokens, turns and lines kept raw.
func RenderTotals(w io.Writer, t *Transcript) error {
	u := t.Usage
	s := fmt.Sprintf("tokens: %d in, %d out, %d cached", u.InputTokens, u.OutputTokens, u.CacheReadTokens)
	if u.CostUSD > 0 {
		s += fmt.Sprintf(" · $%.4f", u.CostUSD)
	}
	turns := 0
	for _, e := range t.Events {
		if e.Kind == KindResult {
			turns++
		}
	}
	s += fmt.Sprintf(" · %d turn(s)", turns)
	if t.Raw > 0 {
		s += fmt.Sprintf(" · %d line(s) not understood, kept raw", t.Raw)
	}
	_, err := io.WriteString(w, s+"\n")
	return err
}

// block prefixes a possibly multi-line text with who says it, continuation lines indented under it.
func block(who, text string) string {
	text = strings.TrimRight(text, "\n")
	return who + ": " + strings.ReplaceAll(text, "\n", "\n"+strings.Repeat(" ", len(who)+2))
}

// oneLine folds s to its first line, cut to max runes.
func oneLine(s string, max int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	if r := []rune(s); len(r) > max {
		s = string(r[:max]) + "…"
	}
	return s
}

// Stream parses a growing transcript: Feed it bytes as they arrive; complete lines become events, a partial
// last line waits for the rest. Transcript totals what was parsed.
type Stream struct {
	p       Parser
	partial []byte
	T       Transcript
}

// NewStream returns a Stream for format.
func (ps Parsers) NewStream(format string) (*Stream, error) {
	p, err := ps.New(format)
	if err != nil {
		return nil, err
	}
	return &Stream{p: p}, nil
}

// Feed parses the complete lines in b (with what was left over before) and returns their events.
func (s *Stream) Feed(b []byte) []Event {
	s.partial = append(s.partial, b...)
	var out []Event
	for {
		i := bytes.IndexByte(s.partial, '\n')
		if i < 0 {
			break
		}
		out = append(out, s.p.Parse(s.partial[:i])...)
		s.partial = s.partial[i+1:]
	}
	s.partial = append([]byte(nil), s.partial...)
	s.T.add(out)
	return out
}

// Close parses a last line without its newline and whatever the parser still holds.
func (s *Stream) Close() []Event {
	var out []Event
	if len(bytes.TrimSpace(s.partial)) > 0 {
		out = append(out, s.p.Parse(s.partial)...)
	}
	s.partial = nil
	out = append(out, s.p.Flush()...)
	s.T.add(out)
	return out
}

// RetryAttempt is " (attempt 3/10)" for a CLI's retry of its model's API, " (attempt 3)" without its bound, ""
// when it did not say.
func RetryAttempt(attempt, max int) string {
	switch {
	case attempt <= 0:
		return ""
	case max <= 0:
		return fmt.Sprintf(" (attempt %d)", attempt)
	}
	return fmt.Sprintf(" (attempt %d/%d)", attempt, max)
}
