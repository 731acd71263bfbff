package modelserver

import (
	"encoding/json"
	"net/http"
	"strings"
)

type geminiRequest struct {
	Contents []struct {
		Role  string `json:"role"`
		Parts []struct {
			Text             string `json:"text"`
			FunctionResponse *struct {
				Response any `json:"response"`
			} `json:"functionResponse"`
		} `json:"parts"`
	} `json:"contents"`
	Tools []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	GenerationConfig struct {
		ResponseMimeType   string         `json:"responseMimeType"`
		ResponseSchema     map[string]any `json:"responseSchema"`
		ResponseJSONSchema map[string]any `json:"responseJsonSchema"`
	} `json:"generationConfig"`
}

// gemini answers /v1beta/models/{model}:{streamGenerateContent,generateContent,countTokens}.
func (s *Server) gemini(w http.ResponseWriter, r *http.Request, raw []byte, req *Request) {
	model, method, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/v1beta/models/"), "/v1/models/"), ":")
	var in geminiRequest
	if err := json.Unmarshal(raw, &in); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"code": 400,
			"message": "modelserver: " + err.Error(), "status": "INVALID_ARGUMENT"}})
		return
	}
	if method == "countTokens" {
		req.Provider = ""
		writeJSON(w, http.StatusOK, map[string]any{"totalTokens": len(raw)/4 + 1})
		return
	}
	if method != "streamGenerateContent" && method != "generateContent" {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": map[string]any{"code": 404,
			"message": "modelserver: no method " + method, "status": "NOT_FOUND"}})
		return
	}
	done := 0
	req.Model = model
	for _, c := range in.Contents {
		switch c.Role {
		case "model":
			done++
		case "user", "":
			for _, p := range c.Parts {
				if p.Text != "" {
					req.UserTexts = append(req.UserTexts, p.Text)
				}
				if p.FunctionResponse != nil {
					var parts []string
					stringsIn(p.FunctionResponse.Response, &parts)
					req.ToolOutputs = append(req.ToolOutputs, strings.Join(parts, "\n"))
				}
			}
		}
	}
	for _, t := range in.Tools {
		for _, d := range t.FunctionDeclarations {
			req.Tools = append(req.Tools, d.Name)
		}
	}
	if f, ok := s.takeFailure(); ok {
		f.writeGemini(w)
		return
	}
	var part map[string]any
	if len(req.Tools) == 0 {
		req.Side = true
		part = map[string]any{"text": s.sc.sideText()}
		if in.GenerationConfig.ResponseMimeType == "application/json" {
			schema := in.GenerationConfig.ResponseJSONSchema
			if schema == nil {
				schema = in.GenerationConfig.ResponseSchema
			}
			b, _ := json.Marshal(fromSchema(schema))
			part = map[string]any{"text": string(b)}
		}
	} else {
		turn, ok := s.sc.turn(done)
		if ok && turn.Kind == KindHang {
			req.Turn = done
			<-r.Context().Done()
			return
		}
		req.Turn, req.Final = done, !ok
		if !ok {
			req.Turn = -1
		}
		part = s.geminiPart(turn, req.Tools)
	}
	req.Usage = usageFor(len(raw), done, false)
	u := req.Usage
	chunk := map[string]any{
		"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{part}},
			"finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]any{"promptTokenCount": u.Prompt(), "cachedContentTokenCount": u.CacheReadTokens,
			"candidatesTokenCount": u.OutputTokens, "totalTokenCount": u.Prompt() + u.OutputTokens},
		"modelVersion": model,
	}
	if method == "generateContent" {
		writeJSON(w, http.StatusOK, chunk)
		return
	}
	startSSE(w).event("", chunk)
}

// geminiPart renders a turn as gemini's tools (write_file, replace, run_shell_command, read_file) or text.
func (s *Server) geminiPart(t Turn, declared []string) map[string]any {
	call := func(name string, args map[string]any) map[string]any {
		return map[string]any{"functionCall": map[string]any{"name": name, "args": args}}
	}
	switch t.Kind {
	case KindWrite:
		return call(pick(declared, "write_file"), map[string]any{"file_path": s.abs(t.Path), "content": t.Content})
	case KindEdit:
		return call(pick(declared, "replace"), map[string]any{"file_path": s.abs(t.Path), "old_string": t.Old,
			"new_string": t.New, "instruction": "Replace the text."})
	case KindShell:
		return call(pick(declared, "run_shell_command"), map[string]any{"command": t.Command,
			"description": "Run a command"})
	case KindRead:
		return call(pick(declared, "read_file"), map[string]any{"file_path": s.abs(t.Path)})
	case KindAsk:
		return map[string]any{"text": t.questionText()}
	}
	return map[string]any{"text": t.Text}
}

// fromSchema makes a value that satisfies a JSON schema well enough for gemini's side requests (router,
// next-speaker check): objects get their properties, enums their first value.
func fromSchema(schema map[string]any) any {
	if enum, ok := schema["enum"].([]any); ok && len(enum) > 0 {
		return enum[0]
	}
	typ, _ := schema["type"].(string)
	switch strings.ToLower(typ) {
	case "object":
		out := map[string]any{}
		props, _ := schema["properties"].(map[string]any)
		for k, v := range props {
			if m, ok := v.(map[string]any); ok {
				out[k] = fromSchema(m)
			}
			if k == "next_speaker" {
				out[k] = "user" // the model's turn is over: never make gemini continue on its own
			}
		}
		return out
	case "array":
		return []any{}
	case "boolean":
		return false
	case "number", "integer":
		if m, ok := schema["minimum"].(float64); ok {
			return m
		}
		return 1
	}
	return "ok"
}
