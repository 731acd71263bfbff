package headless

import (
	"encoding/json"
	"strings"
)

// codexParser reads `codex exec --json`. Codex sends no text deltas: each item arrives whole in
// item.completed, so item.started and item.updated are ignored.
type codexParser struct{}

type codexLine struct {
	Type     string     `json:"type"`
	ThreadID string     `json:"thread_id"`
	Item     *codexItem `json:"item"`
	Usage    *struct {
		InputTokens       int64 `json:"input_tokens"`
		CachedInputTokens int64 `json:"cached_input_tokens"`
		OutputTokens      int64 `json:"output_tokens"`
	} `json:"usage"`
	Error   json.RawMessage `json:"error"`
	Message string          `json:"message"`
}

type codexItem struct {
	ID               string `json:"id"`
	Type             string `json:"type"`
	Text             string `json:"text"`
	Command          string `json:"command"`
	AggregatedOutput string `json:"aggregated_output"`
	ExitCode         *int   `json:"exit_code"`
	Status           string `json:"status"`
	Changes          []struct {
		Path string `json:"path"`
		Kind string `json:"kind"`
	} `json:"changes"`
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Result    json.RawMessage `json:"result"`
	Error     json.RawMessage `json:"error"`
	Message   string          `json:"message"`
	Query     string          `json:"query"`
}

// Parse implements Parser.
func (p *codexParser) Parse(line []byte) []Event {
	var m codexLine
	line, blank, ok := decodeLine(line, &m, &m.Type)
	if blank {
		return nil
	}
	if !ok {
		return []Event{rawEvent(line)}
	}
	switch m.Type {
	case "thread.started":
		return []Event{{Kind: KindInit, SessionID: m.ThreadID}}
	case "turn.started", "item.started", "item.updated":
		return nil
	case "item.completed":
		if m.Item == nil {
			return []Event{rawEvent(line)}
		}
		if evs, known := codexItemEvents(m.Item); known {
			return evs
		}
	case "turn.completed":
		u := &Usage{Turns: 1}
		if m.Usage != nil {
			u.InputTokens = max(m.Usage.InputTokens-m.Usage.CachedInputTokens, 0) // codex's input counts the cached part
			u.OutputTokens = m.Usage.OutputTokens
			u.CachedTokens = m.Usage.CachedInputTokens
		}
		return []Event{{Kind: KindResult, Status: "success", Usage: u}}
	case "turn.failed":
		return []Event{{Kind: KindResult, Status: "failed", IsError: true, Text: textOf(m.Error),
			Usage: &Usage{Turns: 1}}}
	case "error":
		return []Event{{Kind: KindError, Text: m.Message}}
	}
	return []Event{rawEvent(line)}
}

// Flush implements Parser; codex has nothing to accumulate.
func (p *codexParser) Flush() []Event { return nil }

// codexItemEvents maps a completed item; known is false for item types this parser does not know.
func codexItemEvents(it *codexItem) (evs []Event, known bool) {
	switch it.Type {
	case "agent_message":
		return []Event{{Kind: KindAssistant, Text: it.Text}}, true
	case "reasoning", "todo_list":
		return nil, true // the model's private notes and plan, not conversation
	case "command_execution":
		failed := it.Status == "failed" || it.Status == "declined" || (it.ExitCode != nil && *it.ExitCode != 0)
		return []Event{
			{Kind: KindToolCall, Tool: "shell", ToolID: it.ID, Input: it.Command},
			{Kind: KindToolResult, ToolID: it.ID, Output: truncate(it.AggregatedOutput), IsError: failed},
		}, true
	case "file_change":
		paths := make([]string, 0, len(it.Changes))
		for _, c := range it.Changes {
			paths = append(paths, c.Path)
		}
		return []Event{{Kind: KindToolCall, Tool: "file_change", ToolID: it.ID, Input: strings.Join(paths, "\n")}}, true
	case "mcp_tool_call":
		res := Event{Kind: KindToolResult, ToolID: it.ID, Output: truncate(textOf(it.Result)),
			IsError: it.Status == "failed" || (len(it.Error) > 0 && string(it.Error) != "null")}
		if res.IsError && len(it.Error) > 0 {
			res.Output = truncate(textOf(it.Error))
		}
		return []Event{
			{Kind: KindToolCall, Tool: it.Server + "." + it.Tool, ToolID: it.ID, Input: compact(it.Arguments)},
			res,
		}, true
	case "web_search":
		return []Event{{Kind: KindToolCall, Tool: "web_search", ToolID: it.ID, Input: it.Query}}, true
	case "error":
		return []Event{{Kind: KindError, Text: it.Message}}, true
	}
	return nil, false
}
