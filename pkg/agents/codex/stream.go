package codex

import (
	"encoding/json"
	"strings"

	"github.com/aceworks/ace/pkg/headless"
)

// parser reads `codex exec --json`. Codex sends no text deltas: each item arrives whole in
// item.completed, so item.started and item.updated are ignored.
type parser struct{}

type streamLine struct {
	Type     string `json:"type"`
	ThreadID string `json:"thread_id"`
	Item     *item  `json:"item"`
	Usage    *struct {
		InputTokens       int64 `json:"input_tokens"`
		CachedInputTokens int64 `json:"cached_input_tokens"`
		OutputTokens      int64 `json:"output_tokens"`
	} `json:"usage"`
	Error   json.RawMessage `json:"error"`
	Message string          `json:"message"`
}

type item struct {
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

// Parse implements headless.Parser.
func (p *parser) Parse(line []byte) []headless.Event {
	var m streamLine
	if evs, ok := headless.Decode(line, &m, &m.Type); !ok {
		return evs
	}
	switch m.Type {
	case "thread.started":
		return []headless.Event{{Kind: headless.KindInit, SessionID: m.ThreadID}}
	case "turn.started", "item.started", "item.updated":
		return nil
	case "item.completed":
		if m.Item == nil {
			return []headless.Event{headless.RawEvent(line)}
		}
		if evs, known := itemEvents(m.Item); known {
			return evs
		}
	case "turn.completed":
		u := &headless.Usage{Turns: 1}
		if m.Usage != nil {
			u.InputTokens = max(m.Usage.InputTokens-m.Usage.CachedInputTokens, 0) // codex's input counts the cached part
			u.OutputTokens = m.Usage.OutputTokens
			u.CacheReadTokens = m.Usage.CachedInputTokens
		}
		return []headless.Event{{Kind: headless.KindResult, Status: "success", Usage: u}}
	case "turn.failed":
		return []headless.Event{{Kind: headless.KindResult, Status: "failed", IsError: true, Text: headless.TextOf(m.Error),
			Usage: &headless.Usage{Turns: 1}}}
	case "error":
		if ev, ok := retryEvent(m.Message); ok {
			return []headless.Event{ev}
		}
		return []headless.Event{{Kind: headless.KindError, Text: m.Message}}
	}
	return []headless.Event{headless.RawEvent(line)}
}

// Flush implements headless.Parser; codex has nothing to accumulate.
func (p *parser) Flush() []headless.Event { return nil }

// itemEvents maps a completed item; known is false for item types this parser does not know.
func itemEvents(it *item) (evs []headless.Event, known bool) {
	switch it.Type {
	case "agent_message":
		return []headless.Event{{Kind: headless.KindAssistant, Text: it.Text}}, true
	case "reasoning", "todo_list":
		return nil, true // the model's private notes and plan, not conversation
	case "command_execution":
		failed := it.Status == "failed" || it.Status == "declined" || (it.ExitCode != nil && *it.ExitCode != 0)
		return []headless.Event{
			{Kind: headless.KindToolCall, Tool: "shell", ToolID: it.ID, Input: it.Command},
			{Kind: headless.KindToolResult, ToolID: it.ID, Output: headless.Truncate(it.AggregatedOutput), IsError: failed},
		}, true
	case "file_change":
		paths := make([]string, 0, len(it.Changes))
		for _, c := range it.Changes {
			paths = append(paths, c.Path)
		}
		return []headless.Event{{Kind: headless.KindToolCall, Tool: "file_change", ToolID: it.ID, Input: strings.Join(paths, "\n")}}, true
	case "mcp_tool_call":
		res := headless.Event{Kind: headless.KindToolResult, ToolID: it.ID, Output: headless.Truncate(headless.TextOf(it.Result)),
			IsError: it.Status == "failed" || (len(it.Error) > 0 && string(it.Error) != "null")}
		if res.IsError && len(it.Error) > 0 {
			res.Output = headless.Truncate(headless.TextOf(it.Error))
		}
		return []headless.Event{
			{Kind: headless.KindToolCall, Tool: it.Server + "." + it.Tool, ToolID: it.ID, Input: headless.CompactJSON(it.Arguments)},
			res,
		}, true
	case "web_search":
		return []headless.Event{{Kind: headless.KindToolCall, Tool: "web_search", ToolID: it.ID, Input: it.Query}}, true
	case "error":
		return []headless.Event{{Kind: headless.KindError, Text: it.Message}}, true
	}
	return nil, false
}
