package claude

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aceworks/ace/pkg/headless"
)

// parser reads `claude -p --output-format stream-json --verbose` (optionally with
// --include-partial-messages, which adds stream_event lines carrying text deltas).
type parser struct {
	buf headless.DeltaBuf
}

type streamLine struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	SessionID string `json:"session_id"`
	Model     string `json:"model"`
	Message   *struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"` // a string or a list of blocks
	} `json:"message"`
	Event *struct {
		Type  string `json:"type"`
		Delta *struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"delta"`
	} `json:"event"`
	IsError        bool            `json:"is_error"`
	Result         string          `json:"result"`
	Errors         json.RawMessage `json:"errors"`
	NumTurns       int             `json:"num_turns"`
	DurationMS     int64           `json:"duration_ms"`
	Usage          *apiUsage       `json:"usage"`
	TotalCostUSD   float64         `json:"total_cost_usd"`
	APIErrorStatus int             `json:"api_error_status"`
	// Error is set on the synthetic assistant message claude writes for a failed request ("rate_limit"), and on a
	// system/api_retry line, with its Attempt of MaxRetries and the ErrorStatus the API answered (0: none).
	Error       string `json:"error"`
	Attempt     int    `json:"attempt"`
	MaxRetries  int    `json:"max_retries"`
	ErrorStatus int    `json:"error_status"`
	// A rate_limit_event carries its fields in rate_limit_info (or, in some versions, at the top level).
	RateLimitInfo *rateLimit `json:"rate_limit_info"`
	rateLimit
}

type rateLimit struct {
	Status   string `json:"status"`
	ResetsAt int64  `json:"resetsAt"`
}

type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// Parse implements headless.Parser.
func (p *parser) Parse(line []byte) []headless.Event {
	var m streamLine
	if evs, ok := headless.Decode(line, &m, &m.Type); !ok {
		return evs
	}
	switch m.Type {
	case "stream_event":
		// Only text deltas matter; the other stream events (message_start, content_block_stop…) do not end the
		// message, because the complete assistant message that follows them carries the same text.
		if m.Event != nil && m.Event.Type == "content_block_delta" && m.Event.Delta != nil &&
			m.Event.Delta.Type == "text_delta" {
			p.buf.Add(m.Event.Delta.Text)
		}
		return nil
	case "system":
		out := p.buf.Flush()
		switch m.Subtype {
		case "init":
			out = append(out, headless.Event{Kind: headless.KindInit, SessionID: m.SessionID, Model: m.Model})
		case "api_retry":
			out = append(out, apiRetry(&m))
		}
		return out // other subtypes (hooks, compaction) are bookkeeping, not conversation
	case "rate_limit_event":
		rl := m.rateLimit
		if m.RateLimitInfo != nil {
			rl = *m.RateLimitInfo
		}
		if rl.Status != "rejected" {
			return nil // allowed, allowed_warning: information only
		}
		return append(p.buf.Flush(),
			headless.Event{Kind: headless.KindLimit, ResetsAt: rl.ResetsAt, Text: "rate limit: rejected"})
	case "assistant":
		var out []headless.Event
		if m.Error == "rate_limit" {
			out = append(p.buf.Flush(), headless.Event{Kind: headless.KindLimit, Text: "rate limit"})
		}
		if m.Message == nil {
			return append(out, headless.RawEvent(line))
		}
		return append(out, p.assistant(m.Message.Content)...)
	case "user":
		if m.Message == nil {
			return []headless.Event{headless.RawEvent(line)}
		}
		return append(p.buf.Flush(), userEvents(m.Message.Content)...)
	case "result":
		out := append(p.buf.Flush(), result(&m))
		if m.APIErrorStatus == 429 || m.APIErrorStatus == 529 {
			out = append(out, headless.Event{Kind: headless.KindLimit, Text: fmt.Sprintf("API error %d", m.APIErrorStatus)})
		}
		return out
	}
	return []headless.Event{headless.RawEvent(line)}
}

// Flush implements headless.Parser.
func (p *parser) Flush() []headless.Event { return p.buf.Flush() }

// assistant turns one message's blocks into events, joining consecutive text blocks into one event.
func (p *parser) assistant(content json.RawMessage) []headless.Event {
	var blocks []block
	if json.Unmarshal(content, &blocks) != nil {
		return append(p.buf.Flush(), headless.Event{Kind: headless.KindAssistant, Text: headless.TextOf(content)})
	}
	var out []headless.Event
	var text []string
	hasText := false
	endText := func() {
		if len(text) > 0 {
			out = append(out, headless.Event{Kind: headless.KindAssistant, Text: strings.Join(text, "\n")})
			text = nil
		}
	}
	for _, b := range blocks {
		switch b.Type {
		case "text":
			hasText = true
			text = append(text, b.Text)
		case "tool_use":
			endText()
			out = append(out, headless.Event{Kind: headless.KindToolCall, Tool: b.Name, ToolID: b.ID,
				Input: headless.CompactJSON(b.Input)})
		}
		// thinking blocks are skipped: they are not part of the conversation.
	}
	endText()
	if hasText {
		// The complete message repeats the text its deltas streamed; emitting both would double it.
		p.buf.Reset()
		return out
	}
	return append(p.buf.Flush(), out...)
}

// userEvents reads a user message: tool results, or text the CLI echoes back.
func userEvents(content json.RawMessage) []headless.Event {
	var blocks []block
	if json.Unmarshal(content, &blocks) != nil {
		if s := headless.TextOf(content); s != "" {
			return []headless.Event{{Kind: headless.KindUser, Text: s}}
		}
		return nil
	}
	var out []headless.Event
	for _, b := range blocks {
		switch b.Type {
		case "tool_result":
			out = append(out, headless.Event{Kind: headless.KindToolResult, ToolID: b.ToolUseID,
				Output: headless.Truncate(headless.TextOf(b.Content)), IsError: b.IsError})
		case "text":
			out = append(out, headless.Event{Kind: headless.KindUser, Text: b.Text})
		}
	}
	return out
}

func result(m *streamLine) headless.Event {
	e := headless.Event{Kind: headless.KindResult, SessionID: m.SessionID, Status: m.Subtype, Text: m.Result,
		IsError: m.IsError || strings.HasPrefix(m.Subtype, "error")}
	if e.Status == "" {
		e.Status = "success"
	}
	if e.IsError && e.Status == "success" {
		e.Status = "error" // an API failure can report subtype success with is_error set
	}
	if e.Text == "" && len(m.Errors) > 0 {
		var errs []string
		if json.Unmarshal(m.Errors, &errs) == nil {
			e.Text = strings.Join(errs, "\n")
		}
	}
	u := &headless.Usage{Turns: m.NumTurns, DurationMS: m.DurationMS, Model: m.Model}
	if m.Usage != nil {
		u.Usage = m.Usage.tokens()
	}
	u.CostUSD = m.TotalCostUSD
	e.Usage = u
	return e
}
