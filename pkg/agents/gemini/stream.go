package gemini

import (
	"encoding/json"

	"github.com/aceworks/ace/pkg/headless"
	"github.com/aceworks/ace/pkg/usage"
)

// parser reads `gemini -p --output-format stream-json`, whose assistant text arrives as delta messages.
type parser struct {
	buf headless.DeltaBuf
}

type streamLine struct {
	Type       string          `json:"type"`
	SessionID  string          `json:"session_id"`
	Model      string          `json:"model"`
	Role       string          `json:"role"`
	Content    string          `json:"content"`
	Delta      bool            `json:"delta"`
	ToolName   string          `json:"tool_name"`
	ToolID     string          `json:"tool_id"`
	Parameters json.RawMessage `json:"parameters"`
	Status     string          `json:"status"`
	Output     json.RawMessage `json:"output"`
	Error      json.RawMessage `json:"error"` // {type, message} on tool_result and result
	Severity   string          `json:"severity"`
	Message    string          `json:"message"`
	Stats      *struct {
		InputTokens  int64 `json:"input_tokens"`
		OutputTokens int64 `json:"output_tokens"`
		Cached       int64 `json:"cached"`
		DurationMS   int64 `json:"duration_ms"`
	} `json:"stats"`
}

// Parse implements headless.Parser.
func (p *parser) Parse(line []byte) []headless.Event {
	var m streamLine
	// A line kept raw is not a message boundary: a stray line must not split an assistant message in two.
	if evs, ok := headless.Decode(line, &m, &m.Type); !ok {
		return evs
	}
	if m.Type == "message" && m.Role == "assistant" && m.Delta {
		p.buf.Add(m.Content)
		return nil
	}
	var e headless.Event
	switch m.Type {
	case "init":
		e = headless.Event{Kind: headless.KindInit, SessionID: m.SessionID, Model: m.Model}
	case "message":
		switch m.Role {
		case "user":
			e = headless.Event{Kind: headless.KindUser, Text: m.Content}
		case "assistant":
			e = headless.Event{Kind: headless.KindAssistant, Text: m.Content}
		default:
			return []headless.Event{headless.RawEvent(line)}
		}
	case "tool_use":
		e = headless.Event{Kind: headless.KindToolCall, Tool: m.ToolName, ToolID: m.ToolID, Input: headless.CompactJSON(m.Parameters)}
	case "tool_result":
		e = headless.Event{Kind: headless.KindToolResult, ToolID: m.ToolID, IsError: m.Status != "success", Output: headless.TextOf(m.Output)}
		if e.Output == "" && len(m.Error) > 0 {
			e.Output = headless.TextOf(m.Error)
		}
		e.Output = headless.Truncate(e.Output)
	case "error":
		// Status carries the severity so callers can tell warnings from fatal errors.
		e = headless.Event{Kind: headless.KindError, Text: m.Message, Status: m.Severity}
	case "result":
		e = headless.Event{Kind: headless.KindResult, Status: m.Status, IsError: m.Status != "success"}
		if len(m.Error) > 0 {
			e.Text = headless.TextOf(m.Error)
		}
		if m.Stats != nil {
			// gemini's input counts the cached part, as its API's promptTokenCount does.
			e.Usage = &headless.Usage{Usage: usage.Usage{InputTokens: max(m.Stats.InputTokens-m.Stats.Cached, 0),
				OutputTokens: m.Stats.OutputTokens, CacheReadTokens: m.Stats.Cached}, DurationMS: m.Stats.DurationMS}
		}
	default:
		return []headless.Event{headless.RawEvent(line)}
	}
	return append(p.buf.Flush(), e)
}

// Flush implements headless.Parser.
func (p *parser) Flush() []headless.Event { return p.buf.Flush() }
