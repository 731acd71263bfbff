// Package headless runs coding-agent CLIs without a terminal and turns their JSON event streams into typed events.
package headless

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode/utf8"
)

// Kind tells what an Event describes; it decides which Event fields are set.
type Kind string

// Event kinds. The comment after each lists the Event fields it sets.
const (
	KindInit       Kind = "init"        // SessionID, Model
	KindUser       Kind = "user"        // Text (a user message echoed by the CLI)
	KindAssistant  Kind = "assistant"   // Text: one whole assistant message (deltas accumulated)
	KindToolCall   Kind = "tool_call"   // Tool, ToolID, Input (compact JSON or the shell command)
	KindToolResult Kind = "tool_result" // ToolID, Output (truncated to 4 KiB), IsError
	KindResult     Kind = "result"      // Status ("success"/"error"...), Text (final result text), Usage, IsError
	KindError      Kind = "error"       // Text
	KindLimit      Kind = "limit"       // Text, ResetsAt (0: not said): the account hit a usage or rate limit
	KindRaw        Kind = "raw"         // Raw: a line that is not JSON or of an unknown type; never fatal
)

// Usage is the token and time accounting an agent reports at the end of a run or turn.
type Usage struct {
	// InputTokens are the input tokens not read from the prompt cache (claude's input_tokens; codex's and
	// gemini's input minus its cached part), so that input + cached is what the model read, each priced apart.
	InputTokens  int64 `json:"input_tokens,omitempty"`
	OutputTokens int64 `json:"output_tokens,omitempty"`
	CachedTokens int64 `json:"cached_tokens,omitempty"`
	// CacheWriteTokens are input tokens written to the prompt cache (claude's cache_creation_input_tokens).
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
	// CostUSD is the cost the CLI itself reported (claude's total_cost_usd); 0 when it reports none.
	CostUSD float64 `json:"cost_usd,omitempty"`
	// Model is the model the usage was spent on, when the stream says.
	Model      string `json:"model,omitempty"`
	Turns      int    `json:"turns,omitempty"`
	DurationMS int64  `json:"duration_ms,omitempty"`
}

// add sums u2 into u; used to total a transcript's result events.
func (u *Usage) add(u2 *Usage) {
	if u2 == nil {
		return
	}
	u.InputTokens += u2.InputTokens
	u.OutputTokens += u2.OutputTokens
	u.CachedTokens += u2.CachedTokens
	u.CacheWriteTokens += u2.CacheWriteTokens
	u.CostUSD += u2.CostUSD
	if u2.Model != "" {
		u.Model = u2.Model
	}
	u.Turns += u2.Turns
	u.DurationMS += u2.DurationMS
}

// Event is one typed step of an agent run, the same shape for every CLI.
type Event struct {
	Kind      Kind   `json:"kind"`
	SessionID string `json:"session_id,omitempty"`
	Model     string `json:"model,omitempty"`
	Text      string `json:"text,omitempty"`
	Tool      string `json:"tool,omitempty"`
	ToolID    string `json:"tool_id,omitempty"`
	Input     string `json:"input,omitempty"`
	Output    string `json:"output,omitempty"`
	IsError   bool   `json:"is_error,omitempty"`
	Status    string `json:"status,omitempty"`
	Usage     *Usage `json:"usage,omitempty"`
	Raw       string `json:"raw,omitempty"`
	// ResetsAt is when a limit resets, in Unix seconds (KindLimit).
	ResetsAt int64 `json:"resets_at,omitempty"`
}

// Parser turns one agent's stream, line by line, into events. It is stateful: delta messages are accumulated
// and emitted as one KindAssistant event when the message ends (next non-delta event) or at Flush.
type Parser interface {
	Parse(line []byte) []Event // never fails: bad or unknown lines come back as KindRaw
	Flush() []Event            // end of stream: emit whatever is still accumulated
}

// formats maps a stream format, as an agent profile names it (agents.<name>.headless_format), to its parser.
// The profile chooses; nothing here knows which agent speaks which format.
func formats() map[string]func() Parser {
	return map[string]func() Parser{
		"claude": func() Parser { return &claudeParser{} },
		"codex":  func() Parser { return &codexParser{} },
		"gemini": func() Parser { return &geminiParser{} },
	}
}

// Formats lists the stream formats ace parses, sorted.
func Formats() []string {
	var out []string
	for f := range formats() {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

// NewParser returns the parser for a stream format (see Formats). Unknown format → error.
func NewParser(format string) (Parser, error) {
	if mk, ok := formats()[format]; ok {
		return mk(), nil
	}
	return nil, fmt.Errorf("headless: unknown stream format %q (want one of %s)", format, strings.Join(Formats(), ", "))
}

// Transcript summarises a whole stream (used by `ace logs`).
type Transcript struct {
	Events    []Event
	Raw       int    // lines kept raw
	SessionID string // the first session id seen
	Usage     Usage  // summed over result events
}

func (t *Transcript) add(evs []Event) {
	for _, e := range evs {
		t.Events = append(t.Events, e)
		if e.Kind == KindRaw {
			t.Raw++
		}
		if t.SessionID == "" && e.SessionID != "" {
			t.SessionID = e.SessionID
		}
		if e.Kind == KindResult {
			t.Usage.add(e.Usage)
		}
	}
}

const (
	// maxOutput bounds tool output kept in an event: logs need a glimpse, not whole build outputs.
	maxOutput = 4 << 10
	// maxLine bounds one stream line; agents put whole file contents in a line, so 64 KiB is too small.
	maxLine = 16 << 20
)

// ParseAll parses every line of r with format's parser. On a read error it returns what was parsed so far
// together with the error.
func ParseAll(format string, r io.Reader) (*Transcript, error) {
	p, err := NewParser(format)
	if err != nil {
		return nil, err
	}
	t := &Transcript{}
	err = readLines(r, maxLine, func(line []byte) { t.add(p.Parse(line)) })
	t.add(p.Flush())
	if err != nil {
		return t, fmt.Errorf("headless: reading %s stream: %w", format, err)
	}
	return t, nil
}

// decodeLine trims line and decodes it into v. blank reports an empty line (skipped, not raw); ok is false
// when the line is not a JSON object with a "type", so the caller keeps it raw.
func decodeLine(line []byte, v any, typ *string) (trimmed []byte, blank, ok bool) {
	trimmed = bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		return trimmed, true, false
	}
	if err := json.Unmarshal(trimmed, v); err != nil || *typ == "" {
		return trimmed, false, false
	}
	return trimmed, false, true
}

// rawEvent keeps a line the parser does not understand; truncated because stray output can be huge.
func rawEvent(line []byte) Event {
	return Event{Kind: KindRaw, Raw: truncate(string(line))}
}

// truncate cuts s to maxOutput bytes without splitting a UTF-8 sequence.
func truncate(s string) string {
	if len(s) <= maxOutput {
		return s
	}
	cut := maxOutput
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// compact renders a JSON value on one line; empty and null become "" so events stay small.
func compact(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return ""
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// textOf reads a value the CLIs send either as a string, as a list of {"type":"text","text":…} blocks, or
// as an object with a "message"; anything else is shown as compact JSON rather than lost.
func textOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) == nil {
		var parts []string
		for _, b := range blocks {
			if b.Type == "text" || b.Text != "" {
				parts = append(parts, b.Text)
			}
		}
		return strings.Join(parts, "\n")
	}
	var obj struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &obj) == nil && obj.Message != "" {
		return obj.Message
	}
	return compact(raw)
}

// deltaBuf accumulates streamed assistant text until the message ends.
type deltaBuf struct {
	b strings.Builder
}

func (d *deltaBuf) add(s string) { d.b.WriteString(s) }

// reset drops the accumulated text, for when a complete message supersedes its deltas.
func (d *deltaBuf) reset() { d.b.Reset() }

// flush emits the accumulated text as one assistant event, or nothing.
func (d *deltaBuf) flush() []Event {
	if d.b.Len() == 0 {
		return nil
	}
	e := Event{Kind: KindAssistant, Text: d.b.String()}
	d.b.Reset()
	return []Event{e}
}
