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

// Parsers are the stream parsers ace knows, by the format an agent profile names (agents.<name>.headless_format).
// The profile chooses; nothing here knows which agent speaks which format, nor any agent at all: each agent's
// folder holds its parser, pkg/agents collects them (agents.Parsers), and whoever reads a stream passes them in.
type Parsers map[string]func() Parser

// Formats lists the stream formats ps parses, sorted.
func (ps Parsers) Formats() []string {
	var out []string
	for f := range ps {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

// New returns a parser for a stream format (see Formats). Unknown format → error.
func (ps Parsers) New(format string) (Parser, error) {
	if mk, ok := ps[format]; ok {
		return mk(), nil
	}
	return nil, fmt.Errorf("headless: unknown stream format %q (want one of %s)", format, strings.Join(ps.Formats(), ", "))
}

const (
	// maxOutput bounds tool output kept in an event: logs need a glimpse, not whole build outputs.
	maxOutput = 4 << 10
	// maxLine bounds one stream line; agents put whole file contents in a line, so 64 KiB is too small.
	maxLine = 16 << 20
)

// ParseAll parses every line of r with format's parser. On a read error it returns what was parsed so far
// together with the error.
func (ps Parsers) ParseAll(format string, r io.Reader) (*Transcript, error) {
	p, err := ps.New(format)
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

// The helpers below are for the parsers, which live with their agents (pkg/agents/<name>).

// Decode reads a stream line into v, whose "type" field typ points at. ok is false when the parser is done with
// the line: evs is then nothing for a blank line (skipped, not raw), or the line kept raw when it is not a JSON
// object with a "type".
func Decode(line []byte, v any, typ *string) (evs []Event, ok bool) {
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		return nil, false
	}
	if err := json.Unmarshal(trimmed, v); err != nil || *typ == "" {
		return []Event{RawEvent(trimmed)}, false
	}
	return nil, true
}

// RawEvent keeps a line the parser does not understand, trimmed; truncated because stray output can be huge.
func RawEvent(line []byte) Event {
	return Event{Kind: KindRaw, Raw: Truncate(string(bytes.TrimSpace(line)))}
}

// Truncate cuts s to maxOutput bytes without splitting a UTF-8 sequence.
func Truncate(s string) string {
	if len(s) <= maxOutput {
		return s
	}
	cut := maxOutput
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// CompactJSON renders a JSON value on one line; empty and null become "" so events stay small.
func CompactJSON(raw json.RawMessage) string {
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

// TextOf reads a value the CLIs send either as a string, as a list of {"type":"text","text":…} blocks, or
// as an object with a "message"; anything else is shown as compact JSON rather than lost.
func TextOf(raw json.RawMessage) string {
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
	return CompactJSON(raw)
}

// DeltaBuf accumulates streamed assistant text until the message ends.
type DeltaBuf struct {
	b strings.Builder
}

// Add appends streamed text.
func (d *DeltaBuf) Add(s string) { d.b.WriteString(s) }

// Reset drops the accumulated text, for when a complete message supersedes its deltas.
func (d *DeltaBuf) Reset() { d.b.Reset() }

// Flush emits the accumulated text as one assistant event, or nothing.
func (d *DeltaBuf) Flush() []Event {
	if d.b.Len() == 0 {
		return nil
	}
	e := Event{Kind: KindAssistant, Text: d.b.String()}
	d.b.Reset()
	return []Event{e}
}
