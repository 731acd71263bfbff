package modelserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/modelserver"
)

func post(t *testing.T, url, body string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// sseData returns the decoded data lines of an SSE body.
func sseData(t *testing.T, body string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var m map[string]any
			if err := json.Unmarshal([]byte(d), &m); err != nil {
				t.Fatalf("bad SSE data %q: %v", d, err)
			}
			out = append(out, m)
		}
	}
	return out
}

const anthropicTools = `"tools":[{"name":"Write"},{"name":"Bash"},{"name":"AskUserQuestion"}]`

func TestAnthropicPicksTurnFromHistory(t *testing.T) {
	t.Parallel()
	began := time.Now()
	srv := modelserver.Start(t, modelserver.Scenario{Dir: "/repo", Turns: []modelserver.Turn{
		modelserver.WriteFile("a.txt", "A\n"), modelserver.Ask("Which?", "x", "y"),
	}, Final: "fin"})
	first := `{"model":"m","stream":true,` + anthropicTools + `,"messages":[{"role":"user","content":"do it $HOME"}]}`
	for range 2 { // a retry gets the same turn
		resp, body := post(t, srv.URL()+"/v1/messages", first, map[string]string{"x-api-key": "sekrit"})
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("status %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		ev := sseData(t, body)
		start := ev[1]["content_block"].(map[string]any)
		if start["name"] != "Write" {
			t.Fatalf("first turn block = %v", start)
		}
		var input map[string]any
		_ = json.Unmarshal([]byte(ev[2]["delta"].(map[string]any)["partial_json"].(string)), &input)
		if input["file_path"] != "/repo/a.txt" || input["content"] != "A\n" {
			t.Fatalf("Write input = %v", input)
		}
		if ev[4]["delta"].(map[string]any)["stop_reason"] != "tool_use" {
			t.Fatalf("stop = %v", ev[4])
		}
	}
	// A side request (no tools) is answered with text and does not advance the script.
	_, side := post(t, srv.URL()+"/v1/messages", `{"model":"m","messages":[{"role":"user","content":"title?"}]}`, nil)
	if !strings.Contains(side, `"text":"OK."`) {
		t.Fatalf("side answer = %s", side)
	}
	second := `{"model":"m","stream":false,` + anthropicTools + `,"messages":[{"role":"user","content":"do it $HOME"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"Write","input":{}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]}]}`
	_, body := post(t, srv.URL()+"/v1/messages", second, nil)
	var msg struct {
		Content []struct {
			Name  string         `json:"name"`
			Input map[string]any `json:"input"`
		} `json:"content"`
	}
	if err := json.Unmarshal([]byte(body), &msg); err != nil || msg.Content[0].Name != "AskUserQuestion" {
		t.Fatalf("second turn = %s (%v)", body, err)
	}
	third := strings.Replace(second, `"content":"ok"}]}]`, `"content":"ok"}]},{"role":"assistant","content":"q"},{"role":"user","content":"x"}]`, 1)
	if _, body := post(t, srv.URL()+"/v1/messages", third, nil); !strings.Contains(body, `"text":"fin"`) {
		t.Fatalf("after the script: %s", body)
	}
	if !srv.SawToolOutput("ok") || srv.SawToolOutput("do it") {
		t.Fatalf("tool outputs = %q", srv.ToolOutputs())
	}
	if !srv.SawUserText("do it $HOME") || srv.SawUserText("title?") {
		t.Fatalf("user texts = %q", srv.UserTexts())
	}
	last := began
	for _, r := range srv.Requests() {
		if v := r.Header.Get("X-Api-Key"); v != "" && v != "REDACTED" {
			t.Fatalf("secret header logged: %q", v)
		}
		// Each request carries when it arrived (bench/live times an answer's way to the model with it).
		if r.At.Before(last) || r.At.After(time.Now()) {
			t.Fatalf("request %s arrived at %v, before the request sent before it (%v) or after now", r.Path, r.At, last)
		}
		last = r.At
	}
	if n := len(srv.ModelRequests()); n != 4 {
		t.Fatalf("model requests = %d, want 4 (2 retries, 2 later turns)", n)
	}
}

func TestOpenAICodeModeAndWebsocketRefusal(t *testing.T) {
	t.Parallel()
	srv := modelserver.Start(t, modelserver.Scenario{Turns: []modelserver.Turn{modelserver.WriteFile("/r/a.txt", "A\nB\n")}})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL()+"/v1/responses", nil)
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Connection", "Upgrade")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUpgradeRequired {
		t.Fatalf("websocket upgrade answered %d", resp.StatusCode)
	}
	body := `{"model":"gpt","stream":true,"input":[{"type":"additional_tools","tools":[{"type":"namespace","name":"functions",` +
		`"tools":[{"type":"custom","name":"exec"}]}]},{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]}]}`
	_, out := post(t, srv.URL()+"/v1/responses", body, nil)
	ev := sseData(t, out)
	item := ev[2]["item"].(map[string]any)
	if item["type"] != "custom_tool_call" || item["name"] != "exec" ||
		!strings.Contains(item["input"].(string), `tools.apply_patch("*** Begin Patch\n*** Add File: /r/a.txt\n+A\n+B\n*** End Patch\n")`) {
		t.Fatalf("code-mode write = %v", item)
	}
	if ev[len(ev)-1]["type"] != "response.completed" {
		t.Fatalf("last event = %v", ev[len(ev)-1])
	}
	// Classic tools: apply_patch as a freeform tool.
	body = `{"model":"gpt","tools":[{"type":"custom","name":"apply_patch"},{"type":"function","name":"shell_command"}],"input":"go"}`
	_, out = post(t, srv.URL()+"/v1/responses", body, nil)
	item = sseData(t, out)[2]["item"].(map[string]any)
	if item["name"] != "apply_patch" || !strings.HasPrefix(item["input"].(string), "*** Begin Patch\n*** Add File: /r/a.txt\n") {
		t.Fatalf("apply_patch = %v", item)
	}
}

// codex's question tool is called where its description allows the default mode; a result that is a JSON
// document shows the model its strings.
func TestOpenAIRequestUserInput(t *testing.T) {
	t.Parallel()
	srv := modelserver.Start(t, modelserver.Scenario{Turns: []modelserver.Turn{modelserver.Ask("Which?", "x", "y")}})
	tools := func(where string) string {
		return `{"type":"additional_tools","tools":[{"type":"namespace","name":"functions","tools":[{"type":"custom","name":"exec"},` +
			`{"type":"function","name":"request_user_input","description":"Ask. This tool is only available in ` + where + `."}]}]}`
	}
	ask := func(where string) map[string]any {
		body := `{"model":"gpt","input":[` + tools(where) + `,{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]}]}`
		_, out := post(t, srv.URL()+"/v1/responses", body, nil)
		return sseData(t, out)[1]["item"].(map[string]any)
	}
	if item := ask("Plan mode"); item["type"] != "message" {
		t.Fatalf("a Plan-only question tool was called: %v", item)
	}
	item := ask("Default or Plan mode")
	var args struct {
		Questions []struct {
			ID, Question string
			Options      []struct{ Label string }
		}
	}
	_ = json.Unmarshal([]byte(item["arguments"].(string)), &args)
	if item["name"] != "request_user_input" || len(args.Questions) != 1 || args.Questions[0].Question != "Which?" ||
		len(args.Questions[0].Options) != 2 || args.Questions[0].Options[1].Label != "y" {
		t.Fatalf("question call = %v", item)
	}
	answered := `{"model":"gpt","input":[` + tools("Default or Plan mode") + `,{"type":"function_call","call_id":"c","name":"request_user_input"},` +
		`{"type":"function_call_output","call_id":"c","output":"{\"answers\":{\"q\":{\"answers\":[\"say \\\"hi\\\"\"]}}}"}]}`
	post(t, srv.URL()+"/v1/responses", answered, nil)
	if !srv.SawToolOutput(`say "hi"`) {
		t.Fatalf("tool outputs = %q", srv.ToolOutputs())
	}
}

func TestGeminiTurnsAndSideJSON(t *testing.T) {
	t.Parallel()
	srv := modelserver.Start(t, modelserver.Scenario{Turns: []modelserver.Turn{modelserver.Shell("echo hi")}})
	tools := `"tools":[{"functionDeclarations":[{"name":"run_shell_command"}]}]`
	_, out := post(t, srv.URL()+"/v1beta/models/gemini-x:streamGenerateContent?alt=sse&key=sekrit",
		`{"contents":[{"role":"user","parts":[{"text":"go"}]}],`+tools+`}`, nil)
	fc := sseData(t, out)[0]["candidates"].([]any)[0].(map[string]any)["content"].(map[string]any)["parts"].([]any)[0].(map[string]any)["functionCall"].(map[string]any)
	if fc["name"] != "run_shell_command" || fc["args"].(map[string]any)["command"] != "echo hi" {
		t.Fatalf("functionCall = %v", fc)
	}
	_, side := post(t, srv.URL()+"/v1beta/models/flash:generateContent", `{"contents":[{"role":"user","parts":[{"text":"route"}]}],`+
		`"generationConfig":{"responseMimeType":"application/json","responseJsonSchema":{"type":"object","properties":{"next_speaker":{"type":"string","enum":["model","user"]},"score":{"type":"INTEGER","minimum":1}}}}}`, nil)
	if !strings.Contains(side, `{\"next_speaker\":\"user\",\"score\":1}`) {
		t.Fatalf("side JSON answer = %s", side)
	}
	if _, ct := post(t, srv.URL()+"/v1beta/models/gemini-x:countTokens", `{"contents":[]}`, nil); !strings.Contains(ct, "totalTokens") {
		t.Fatalf("countTokens = %s", ct)
	}
	for _, r := range srv.Requests() {
		if strings.Contains(r.Query, "sekrit") {
			t.Fatalf("key logged in query %q", r.Query)
		}
	}
}

func TestFailureWindow(t *testing.T) {
	t.Parallel()
	srv := modelserver.Start(t, modelserver.Scenario{})
	reset := time.Unix(2000000000, 0)
	srv.FailNext(1, modelserver.Failure{Kind: modelserver.UsageLimit, ResetAt: reset})
	srv.FailNext(1, modelserver.Failure{Kind: modelserver.Overloaded})
	srv.FailNext(1, modelserver.Failure{Kind: modelserver.RateLimited, RetryAfter: 30 * time.Second})
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	resp, out := post(t, srv.URL()+"/v1/messages", body, nil)
	if resp.StatusCode != 429 || resp.Header.Get("anthropic-ratelimit-unified-status") != "rejected" ||
		resp.Header.Get("anthropic-ratelimit-unified-reset") != "2000000000" || !strings.Contains(out, `"rate_limit_error"`) {
		t.Fatalf("usage limit: %d %v %s", resp.StatusCode, resp.Header, out)
	}
	if resp, out := post(t, srv.URL()+"/v1/messages", body, nil); resp.StatusCode != 529 || !strings.Contains(out, "overloaded_error") {
		t.Fatalf("overloaded: %d %s", resp.StatusCode, out)
	}
	resp, out = post(t, srv.URL()+"/v1/responses", `{"input":"hi"}`, nil)
	if resp.StatusCode != 429 || resp.Header.Get("retry-after") != "30" || !strings.Contains(out, "rate_limit_exceeded") {
		t.Fatalf("openai rate limit: %d %v %s", resp.StatusCode, resp.Header, out)
	}
	if resp, _ := post(t, srv.URL()+"/v1/messages", body, nil); resp.StatusCode != 200 {
		t.Fatalf("after the window: %d", resp.StatusCode)
	}
	srv.FailNext(1, modelserver.Failure{Kind: modelserver.UsageLimit})
	if resp, out := post(t, srv.URL()+"/v1beta/models/g:generateContent", `{"contents":[]}`, nil); resp.StatusCode != 429 ||
		!strings.Contains(out, "PerDay") || !strings.Contains(out, "RESOURCE_EXHAUSTED") {
		t.Fatalf("gemini daily quota: %d %s", resp.StatusCode, out)
	}
}

// TestGatewayRefusesSideRequests: as a gateway users run, the server passes the conversation and refuses
// claude's auto-mode classifier and token counting; without Gateway it answers both.
func TestGatewayRefusesSideRequests(t *testing.T) {
	classifier := `{"model":"m","messages":[{"role":"user","content":"Your ENTIRE response MUST begin with <block>"}]}`
	for _, gw := range []bool{false, true} {
		srv := modelserver.Start(t, modelserver.Scenario{Turns: []modelserver.Turn{modelserver.Text("hi")}, Gateway: gw})
		resp, body := post(t, srv.URL()+"/v1/messages", classifier, nil)
		if gw != (resp.StatusCode == http.StatusForbidden) || !gw && !strings.Contains(body, `\u003cblock\u003eno`) {
			t.Errorf("gateway %v: classifier answered %d %s", gw, resp.StatusCode, body)
		}
		resp, _ = post(t, srv.URL()+"/v1/messages/count_tokens", `{"messages":[]}`, nil)
		if gw != (resp.StatusCode == http.StatusNotFound) {
			t.Errorf("gateway %v: count_tokens answered %d", gw, resp.StatusCode)
		}
		conv := `{"model":"m","stream":false,` + anthropicTools + `,"messages":[{"role":"user","content":"go"}]}`
		if resp, body := post(t, srv.URL()+"/v1/messages", conv, nil); resp.StatusCode != 200 || !strings.Contains(body, `"hi"`) {
			t.Errorf("gateway %v: the conversation got %d %s", gw, resp.StatusCode, body)
		}
	}
}

// TestHangAndDrip: a hanging turn sends nothing until the server closes; a dripping one sends its first bytes
// one at a time, every DripEvery apart.
func TestHangAndDrip(t *testing.T) {
	srv := modelserver.Start(t, modelserver.Scenario{Turns: []modelserver.Turn{modelserver.Text("slow").Dripping(20*time.Millisecond, 10), modelserver.Hang()}})
	conv := `{"model":"m","stream":true,` + anthropicTools + `,"messages":[{"role":"user","content":"go"}]}`
	start := time.Now()
	resp, body := post(t, srv.URL()+"/v1/messages", conv, nil)
	if took := time.Since(start); resp.StatusCode != 200 || !strings.Contains(body, `"slow"`) || took < 10*20*time.Millisecond {
		t.Errorf("drip: %d in %s: %s", resp.StatusCode, took, body)
	}
	second := `{"model":"m","stream":true,` + anthropicTools + `,"messages":[{"role":"user","content":"go"},` +
		`{"role":"assistant","content":"slow"},{"role":"user","content":"more"}]}`
	// Each provider's second turn, after one model turn: anthropic, gemini, openai.
	for path, body := range map[string]string{
		"/v1/messages": second,
		"/v1beta/models/m:streamGenerateContent": `{"contents":[{"role":"user","parts":[{"text":"go"}]},` +
			`{"role":"model","parts":[{"text":"slow"}]},{"role":"user","parts":[{"text":"more"}]}],` +
			`"tools":[{"functionDeclarations":[{"name":"write_file"}]}]}`,
		"/v1/responses": `{"model":"m","stream":true,"tools":[{"type":"function","name":"shell"}],"input":[` +
			`{"type":"message","role":"user","content":"go"},{"type":"message","role":"assistant","content":"slow"},` +
			`{"type":"message","role":"user","content":"more"}]}`,
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL()+path, strings.NewReader(body))
		if resp, err := http.DefaultClient.Do(req); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			t.Errorf("%s: a hanging turn answered %d: %s", path, resp.StatusCode, b)
		}
		cancel()
	}
}
