package modelserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

type openaiRequest struct {
	Model string          `json:"model"`
	Tools []openaiTool    `json:"tools"`
	Input json.RawMessage `json:"input"`
	// Text.Format asks for structured output: codex's session-title request declares the agent's tools but
	// wants {"title": …} in a json_schema.
	Text struct {
		Format struct {
			Type   string         `json:"type"`
			Schema map[string]any `json:"schema"`
		} `json:"format"`
	} `json:"text"`
}

// openaiTool is a declared tool; codex 0.169 nests its tools in namespaces ("functions", …) inside an
// "additional_tools" input item rather than the top-level tools.
type openaiTool struct {
	Type        string       `json:"type"`
	Name        string       `json:"name"`
	Description string       `json:"description"`
	Tools       []openaiTool `json:"tools"`
}

type openaiItem struct {
	Type    string `json:"type"`
	Role    string `json:"role"`
	Content json.RawMessage
	Tools   []openaiTool `json:"tools"`
	Output  any          `json:"output"` // function_call_output, custom_tool_call_output
}

// declare records the tools, namespaces flattened, by name.
func declare(tools []openaiTool, names *[]string, decl map[string]openaiTool) {
	for _, t := range tools {
		if t.Type == "namespace" {
			declare(t.Tools, names, decl)
			continue
		}
		name := t.Name
		if name == "" {
			name = t.Type
		}
		decl[name] = t
		*names = append(*names, name)
	}
}

// openaiResponses answers POST /v1/responses (codex): one output item per turn, as Responses API SSE.
func (s *Server) openaiResponses(ctx context.Context, w http.ResponseWriter, raw []byte, req *Request) {
	var in openaiRequest
	if err := json.Unmarshal(raw, &in); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{
			"type": "invalid_request_error", "message": "modelserver: " + err.Error()}})
		return
	}
	var items []openaiItem
	var text string
	if json.Unmarshal(in.Input, &text) == nil {
		items = []openaiItem{{Type: "message", Role: "user", Content: mustJSON(text)}}
	} else {
		_ = json.Unmarshal(in.Input, &items)
	}
	done := 0
	req.Model = in.Model
	decl := map[string]openaiTool{}
	declare(in.Tools, &req.Tools, decl)
	for _, it := range items {
		switch {
		case it.Type == "additional_tools":
			declare(it.Tools, &req.Tools, decl)
		case it.Type == "message" && it.Role == "assistant", it.Type == "function_call",
			it.Type == "custom_tool_call", it.Type == "local_shell_call":
			done++
		case strings.HasSuffix(it.Type, "_call_output"):
			req.ToolOutputs = append(req.ToolOutputs, openaiOutput(it.Output))
		case (it.Type == "message" || it.Type == "") && it.Role == "user":
			req.UserTexts = append(req.UserTexts, openaiTexts(it.Content)...)
		}
	}
	if f, ok := s.takeFailure(); ok {
		f.writeOpenAI(w)
		return
	}
	var item map[string]any
	switch {
	case in.Text.Format.Type == "json_schema":
		// A side request for structured output (a session title), whatever tools it declares.
		req.Side = true
		b, _ := json.Marshal(fromSchema(in.Text.Format.Schema))
		item = openaiMessage(string(b), done)
	case len(req.Tools) == 0:
		req.Side = true
		item = openaiMessage(s.sc.sideText(), done)
	default:
		turn, ok := s.sc.turn(done)
		if ok && turn.Kind == KindHang {
			req.Turn = done
			<-ctx.Done()
			return
		}
		req.Turn, req.Final = done, !ok
		if !ok {
			req.Turn = -1
		}
		item = s.openaiItem(turn, req.Tools, decl, done)
	}
	id := fmt.Sprintf("resp_modelserver_%d", done)
	req.Usage = usageFor(len(raw), done, false)
	u := req.Usage
	e := startSSE(w)
	e.event("response.created", map[string]any{"type": "response.created",
		"response": map[string]any{"id": id, "object": "response", "status": "in_progress", "model": in.Model}})
	e.event("response.output_item.added", map[string]any{"type": "response.output_item.added",
		"output_index": 0, "item": item})
	if item["type"] == "message" {
		txt := item["content"].([]any)[0].(map[string]any)["text"]
		e.event("response.output_text.delta", map[string]any{"type": "response.output_text.delta",
			"item_id": item["id"], "output_index": 0, "content_index": 0, "delta": txt})
	}
	e.event("response.output_item.done", map[string]any{"type": "response.output_item.done",
		"output_index": 0, "item": item})
	e.event("response.completed", map[string]any{"type": "response.completed", "response": map[string]any{
		"id": id, "object": "response", "status": "completed", "model": in.Model, "output": []any{item},
		"usage": map[string]any{"input_tokens": u.Prompt(), "output_tokens": u.OutputTokens,
			"total_tokens": u.Prompt() + u.OutputTokens, "input_tokens_details": map[string]any{"cached_tokens": u.CacheReadTokens},
			"output_tokens_details": map[string]any{"reasoning_tokens": 0}}}})
}

// openaiItem renders a turn as codex's tools: apply_patch for files, its shell tool for commands and reads.
func (s *Server) openaiItem(t Turn, declared []string, decl map[string]openaiTool, n int) map[string]any {
	callID := fmt.Sprintf("call_modelserver_%d", n)
	call := func(name string, args map[string]any, freeform string) map[string]any {
		if decl[name].Type == "custom" {
			return map[string]any{"type": "custom_tool_call", "id": "ctc_" + callID, "status": "completed",
				"call_id": callID, "name": name, "input": freeform}
		}
		b, _ := json.Marshal(args)
		return map[string]any{"type": "function_call", "id": "fc_" + callID, "status": "completed",
			"call_id": callID, "name": name, "arguments": string(b)}
	}
	// codex's question tool, a plain function also in code mode, with 2-3 options of a label and a description.
	// A model reading its description does not call it where it says it is only available in Plan mode (codex
	// 0.169 in the default mode, unless default_mode_request_user_input is enabled).
	if q, ok := decl["request_user_input"]; ok && t.Kind == KindAsk && !strings.Contains(q.Description, "only available in Plan mode") {
		opts := []any{}
		for _, o := range t.Options {
			opts = append(opts, map[string]any{"label": o, "description": o})
		}
		return call("request_user_input", map[string]any{"questions": []any{map[string]any{
			"id": "question", "header": "Question", "question": t.Text, "options": opts}}}, "")
	}
	// Code mode (codex's default model): one freeform "exec" tool runs JavaScript that calls the nested tools.
	if decl["exec"].Type == "custom" && !has(declared, "apply_patch") {
		js := func(code string) map[string]any { return call("exec", nil, code) }
		run := func(cmd string) map[string]any {
			return js("const r = await tools.exec_command({cmd: " + jsString(cmd) + "});\ntext(r.output);\n")
		}
		switch t.Kind {
		case KindWrite:
			return js("text(await tools.apply_patch(" + jsString("*** Begin Patch\n*** Add File: "+s.abs(t.Path)+"\n"+
				prefixLines("+", t.Content)+"*** End Patch\n") + "));\n")
		case KindEdit:
			return js("text(await tools.apply_patch(" + jsString("*** Begin Patch\n*** Update File: "+s.abs(t.Path)+
				"\n@@\n"+prefixLines("-", t.Old)+prefixLines("+", t.New)+"*** End Patch\n") + "));\n")
		case KindShell:
			return run(t.Command)
		case KindRead:
			return run("cat " + shellQuote(s.abs(t.Path)))
		}
	}
	shell := func(cmd string) map[string]any {
		switch name := pick(declared, "shell_command", "exec_command", "shell"); name {
		case "exec_command":
			return call(name, map[string]any{"cmd": cmd}, cmd)
		case "shell":
			return call(name, map[string]any{"command": []string{"bash", "-lc", cmd}}, cmd)
		default:
			return call(name, map[string]any{"command": cmd}, cmd)
		}
	}
	patch := func(body string) map[string]any {
		p := "*** Begin Patch\n" + body + "*** End Patch\n"
		return call(pick(declared, "apply_patch"), map[string]any{"input": p}, p)
	}
	switch t.Kind {
	case KindWrite:
		return patch("*** Add File: " + s.abs(t.Path) + "\n" + prefixLines("+", t.Content))
	case KindEdit:
		return patch("*** Update File: " + s.abs(t.Path) + "\n@@\n" + prefixLines("-", t.Old) + prefixLines("+", t.New))
	case KindShell:
		return shell(t.Command)
	case KindRead:
		return shell("cat " + shellQuote(s.abs(t.Path)))
	case KindAsk:
		return openaiMessage(t.questionText(), n)
	}
	return openaiMessage(t.Text, n)
}

// openaiOutput is a tool result's text: its strings, and for a result that is a JSON document (codex's
// request_user_input answers: {"answers":{"<id>":{"answers":["…"]}}}) the strings inside it, unquoted.
func openaiOutput(output any) string {
	var parts []string
	stringsIn(output, &parts)
	if s, ok := output.(string); ok && strings.HasPrefix(strings.TrimSpace(s), "{") {
		var doc any
		if json.Unmarshal([]byte(s), &doc) == nil {
			parts = nil
			stringsIn(doc, &parts)
		}
	}
	return strings.Join(parts, "\n")
}

func openaiMessage(text string, n int) map[string]any {
	return map[string]any{"type": "message", "role": "assistant", "id": fmt.Sprintf("msg_modelserver_%d", n),
		"status": "completed", "content": []any{map[string]any{"type": "output_text", "text": text,
			"annotations": []any{}}}}
}

func openaiTexts(content json.RawMessage) []string {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return []string{s}
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(content, &parts)
	var out []string
	for _, p := range parts {
		if p.Type == "input_text" || p.Type == "text" {
			out = append(out, p.Text)
		}
	}
	return out
}

// prefixLines prefixes every line of s (a trailing newline ends the last line, it does not start another).
func prefixLines(prefix, s string) string {
	if s == "" {
		return ""
	}
	var b strings.Builder
	for _, l := range strings.SplitAfter(strings.TrimSuffix(s, "\n"), "\n") {
		b.WriteString(prefix + strings.TrimSuffix(l, "\n") + "\n")
	}
	return b.String()
}

// jsString quotes s as a JavaScript string literal (JSON's quoting is valid JavaScript).
func jsString(s string) string { return string(mustJSON(s)) }

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
