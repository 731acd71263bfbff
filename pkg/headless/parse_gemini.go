package headless

import "encoding/json"

// geminiParser reads `gemini -p --output-format stream-json`, whose assistant text arrives as delta messages.
type geminiParser struct {
	buf deltaBuf
}

type geminiLine struct {
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

// Parse implements Parser.
func (p *geminiParser) Parse(line []byte) []Event {
	var m geminiLine
	line, blank, ok := decodeLine(line, &m, &m.Type)
	if blank {
		return nil
	}
	if !ok {
		// Not a message boundary: a stray line must not split an assistant message in two.
		return []Event{rawEvent(line)}
	}
	if m.Type == "message" && m.Role == "assistant" && m.Delta {
		p.buf.add(m.Content)
		return nil
	}
	var e Event
	switch m.Type {
	case "init":
		e = Event{Kind: KindInit, SessionID: m.SessionID, Model: m.Model}
	case "message":
		switch m.Role {
		case "user":
			e = Event{Kind: KindUser, Text: m.Content}
		case "assistant":
			e = Event{Kind: KindAssistant, Text: m.Content}
		default:
			return []Event{rawEvent(line)}
		}
	case "tool_use":
		e = Event{Kind: KindToolCall, Tool: m.ToolName, ToolID: m.ToolID, Input: compact(m.Parameters)}
	case "tool_result":
		e = Event{Kind: KindToolResult, ToolID: m.ToolID, IsError: m.Status != "success", Output: textOf(m.Output)}
		if e.Output == "" && len(m.Error) > 0 {
			e.Output = textOf(m.Error)
		}
		e.Output = truncate(e.Output)
	case "error":
		// Status carries the severity so callers can tell warnings from fatal errors.
		e = Event{Kind: KindError, Text: m.Message, Status: m.Severity}
	case "result":
		e = Event{Kind: KindResult, Status: m.Status, IsError: m.Status != "success"}
		if len(m.Error) > 0 {
			e.Text = textOf(m.Error)
		}
		if m.Stats != nil {
			// gemini's input counts the cached part, as its API's promptTokenCount does.
			e.Usage = &Usage{InputTokens: max(m.Stats.InputTokens-m.Stats.Cached, 0), OutputTokens: m.Stats.OutputTokens,
				CachedTokens: m.Stats.Cached, DurationMS: m.Stats.DurationMS}
		}
	default:
		return []Event{rawEvent(line)}
	}
	return append(p.buf.flush(), e)
}

// Flush implements Parser.
func (p *geminiParser) Flush() []Event { return p.buf.flush() }
