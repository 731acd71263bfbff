package modelserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

type anthropicRequest struct {
	Model  string `json:"model"`
	Stream bool   `json:"stream"`
	Tools  []struct {
		Name string `json:"name"`
	} `json:"tools"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

type anthropicBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// anthropicMessages answers POST /v1/messages: one content block per turn, streamed as claude reads it.
func (s *Server) anthropicMessages(ctx context.Context, w http.ResponseWriter, raw []byte, req *Request) {
	var in anthropicRequest
	if err := json.Unmarshal(raw, &in); err != nil {
		writeJSON(w, http.StatusBadRequest, anthropicError("invalid_request_error", "modelserver: "+err.Error()))
		return
	}
	done := 0
	for _, m := range in.Messages {
		switch m.Role {
		case "assistant":
			done++
		case "user":
			req.UserTexts = append(req.UserTexts, anthropicTexts(m.Content)...)
			req.ToolOutputs = append(req.ToolOutputs, anthropicToolResults(m.Content)...)
		}
	}
	for _, t := range in.Tools {
		req.Tools = append(req.Tools, t.Name)
	}
	req.Model = in.Model
	if f, ok := s.takeFailure(); ok {
		f.writeAnthropic(w)
		return
	}
	block, stop := map[string]any{"type": "text", "text": s.sc.sideText()}, "end_turn"
	if len(in.Tools) == 0 {
		req.Side = true
		if isClassifierRequest(req.UserTexts) && s.sc.Gateway {
			writeJSON(w, http.StatusForbidden, anthropicError("permission_error", "modelserver gateway: this request is not passed to the vendor"))
			return
		}
		if isClassifierRequest(req.UserTexts) {
			block["text"] = classifierAllow
		}
	} else {
		if turn, ok := s.sc.turn(done); ok && turn.Kind == KindHang {
			req.Turn = done
			<-ctx.Done()
			return
		}
		turn, ok := s.sc.turn(done)
		req.Turn, req.Final = done, !ok
		if !ok {
			req.Turn = -1
		}
		block, stop = s.anthropicBlock(turn, req.Tools, done)
	}
	model := in.Model
	if model == "" {
		model = "claude-sonnet-4-5"
	}
	id := fmt.Sprintf("msg_modelserver_%d", done)
	blocks := []map[string]any{block}
	if turn, ok := s.sc.turn(done); ok && !req.Side && turn.Say != "" && block["type"] == "tool_use" {
		blocks = []map[string]any{{"type": "text", "text": turn.Say}, block}
	}
	req.Usage = usageFor(len(raw), done, true)
	u := req.Usage
	// Each response has its own request id, as the API's; claude records it with the message.
	w.Header().Set("request-id", fmt.Sprintf("req_modelserver_%d", s.responses.Add(1)))
	usage := func(output int64) map[string]any {
		return map[string]any{"input_tokens": u.InputTokens, "output_tokens": output,
			"cache_creation_input_tokens": u.CacheWriteTokens, "cache_read_input_tokens": u.CacheReadTokens}
	}
	if !in.Stream {
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "type": "message", "role": "assistant", "model": model,
			"content": blocks, "stop_reason": stop, "stop_sequence": nil, "usage": usage(u.OutputTokens)})
		return
	}
	if turn, ok := s.sc.turn(done); ok && !req.Side && turn.DripEvery > 0 {
		w = &dripWriter{ResponseWriter: w, ctx: ctx, every: turn.DripEvery, left: turn.DripBytes}
	}
	e := startSSE(w)
	// As the API does: message_start counts one output token so far, message_delta the final count.
	e.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": usage(1)}})
	for i, b := range blocks {
		if b["type"] == "tool_use" {
			input, _ := json.Marshal(b["input"])
			e.event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
			e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": string(input)}})
		} else {
			e.event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "text", "text": ""}})
			e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "text_delta", "text": b["text"]}})
		}
		e.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	e.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": u.OutputTokens}})
	e.event("message_stop", map[string]any{"type": "message_stop"})
}

// claude 2.1.331's default "auto mode" asks the model, before each tool call it checks, whether to block it: a
// request without tools whose instructions say "Your ENTIRE response MUST begin with <block>", answered
// "<block>no</block>" to allow or "<block>yes</block><category>…" to block; an answer of another shape makes
// claude block the call ("Auto mode could not evaluate this action"). The scripted model allows what it
// scripted, as a real model would allow these ordinary edits and commits.
const classifierAllow = "<block>no</block>"

func isClassifierRequest(userTexts []string) bool {
	for _, t := range userTexts {
		if strings.Contains(t, "MUST begin with <block>") {
			return true
		}
	}
	return false
}

// anthropicBlock renders a turn as claude's tool_use (Write, Edit, Bash, Read, AskUserQuestion) or a text block.
func (s *Server) anthropicBlock(t Turn, declared []string, n int) (map[string]any, string) {
	use := func(name string, input map[string]any) (map[string]any, string) {
		return map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_modelserver_%d", n), "name": name,
			"input": input}, "tool_use"
	}
	switch t.Kind {
	case KindWrite:
		return use(pick(declared, "Write"), map[string]any{"file_path": s.abs(t.Path), "content": t.Content})
	case KindEdit:
		return use(pick(declared, "Edit"), map[string]any{"file_path": s.abs(t.Path), "old_string": t.Old,
			"new_string": t.New})
	case KindShell:
		return use(pick(declared, "Bash"), map[string]any{"command": t.Command, "description": "Run a command"})
	case KindRead:
		return use(pick(declared, "Read"), map[string]any{"file_path": s.abs(t.Path)})
	case KindAsk:
		if has(declared, "AskUserQuestion") {
			opts := []any{}
			for _, o := range t.Options {
				opts = append(opts, map[string]any{"label": o, "description": o})
			}
			return use("AskUserQuestion", map[string]any{"questions": []any{map[string]any{
				"question": t.Text, "header": "Question", "options": opts, "multiSelect": false}}})
		}
		return map[string]any{"type": "text", "text": t.questionText()}, "end_turn"
	}
	return map[string]any{"type": "text", "text": t.Text}, "end_turn"
}

func anthropicTexts(content json.RawMessage) []string {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return []string{s}
	}
	var blocks []anthropicBlock
	_ = json.Unmarshal(content, &blocks)
	var out []string
	for _, b := range blocks {
		if b.Type == "text" {
			out = append(out, b.Text)
		}
	}
	return out
}

// anthropicToolResults are the texts of a user message's tool_result blocks (a string or text blocks each).
func anthropicToolResults(content json.RawMessage) []string {
	var blocks []struct {
		Type    string `json:"type"`
		Content any    `json:"content"`
	}
	if json.Unmarshal(content, &blocks) != nil {
		return nil
	}
	var out []string
	for _, b := range blocks {
		if b.Type == "tool_result" {
			var parts []string
			stringsIn(b.Content, &parts)
			out = append(out, strings.Join(parts, "\n"))
		}
	}
	return out
}

func anthropicError(kind, msg string) map[string]any {
	return map[string]any{"type": "error", "error": map[string]any{"type": kind, "message": msg}}
}

// pick returns the first of names the request declares, or the first name when it declares none of them.
func pick(declared []string, names ...string) string {
	for _, n := range names {
		if has(declared, n) {
			return n
		}
	}
	return names[0]
}

func has(declared []string, name string) bool {
	for _, d := range declared {
		if d == name {
			return true
		}
	}
	return false
}
