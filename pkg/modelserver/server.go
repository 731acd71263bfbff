package modelserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Request is one logged request.
type Request struct {
	Provider string // "anthropic", "openai", "gemini", or "" for paths the server does not model
	Method   string
	Path     string
	Query    string      // with secret values replaced
	Header   http.Header // with secret values replaced
	Body     any         // the decoded JSON body (nil when empty or not JSON)
	RawBody  []byte
	// Tools are the tool names the request declares; Side is true for a model request declaring none.
	Tools []string
	Side  bool
	// Turn is the scenario turn index answered (-1 for side requests, failures and non-model paths); Final marks
	// the final text after the script.
	Turn   int
	Final  bool
	Status int
	// Model is the model a model request asked for; Usage is what the response billed (zero for failures and
	// non-model paths).
	Model string
	Usage Usage
	// UserTexts are the texts of user messages in the request's history.
	UserTexts []string
	// ToolOutputs are the texts of tool results in the request's history: what the CLI's tools showed the model
	// (a file it read, a command's output, the human's answer to a question tool).
	ToolOutputs []string

	// At is when the request arrived: its handler began, before the body was read; Took is how long its handler
	// ran (a streamed answer's last byte handed to the connection).
	At   time.Time
	Took time.Duration
}

// Server is a scripted model server on 127.0.0.1.
type Server struct {
	sc   Scenario
	srv  *http.Server
	addr string

	mu       sync.Mutex
	requests []Request
	failures []Failure
	window   *failWindow
	// responses counts the responses served, for request ids.
	responses atomic.Int64
}

// TB is what Start needs of a test (testing.TB has it): the ace binary, which serves the scripted model too (ace
// agents check), does not link the testing package.
type TB interface {
	Helper()
	Fatal(args ...any)
	Cleanup(func())
}

// Start starts a server playing sc and closes it when tb ends. Call it where 127.0.0.1 is reachable (inside a
// loopback namespace: after realcli.Enter).
func Start(tb TB, sc Scenario) *Server {
	tb.Helper()
	s, err := New(sc)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	return s
}

// New starts a server playing sc on a free port of 127.0.0.1 (ace agents check runs one in the ace binary).
// Close ends it.
func New(sc Scenario) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("modelserver: listen on 127.0.0.1: %w", err)
	}
	s := &Server{sc: sc, addr: ln.Addr().String()}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }() // ends with Close
	return s, nil
}

// Close stops the server and the connections it holds (streams in flight end).
func (s *Server) Close() { _ = s.srv.Close() }

// URL is the server's base URL (http://127.0.0.1:PORT), without a path.
func (s *Server) URL() string { return "http://" + s.addr }

// Requests returns a copy of the request log, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// ModelRequests returns the logged scenario requests: model requests that are not side requests.
func (s *Server) ModelRequests() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Provider != "" && !r.Side && r.Status == http.StatusOK {
			out = append(out, r)
		}
	}
	return out
}

// UserTexts returns every distinct user text the scenario requests carried, in order of first appearance: what
// the human (or the CLI on their behalf) said to the model.
func (s *Server) UserTexts() []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range s.ModelRequests() {
		for _, t := range r.UserTexts {
			if !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	return out
}

// SawUserText reports whether some user text equals text exactly.
func (s *Server) SawUserText(text string) bool {
	for _, t := range s.UserTexts() {
		if t == text {
			return true
		}
	}
	return false
}

// SawToolOutput reports whether some tool result the model was shown contains text, byte for byte (tools
// decorate what they return, e.g. with line numbers, so a single line of it is what a test can expect exactly).
func (s *Server) SawToolOutput(text string) bool {
	for _, r := range s.ModelRequests() {
		for _, o := range r.ToolOutputs {
			if strings.Contains(o, text) {
				return true
			}
		}
	}
	return false
}

// ToolOutputs returns every distinct tool result text the scenario requests carried, in order of first appearance.
func (s *Server) ToolOutputs() []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range s.ModelRequests() {
		for _, t := range r.ToolOutputs {
			if !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	return out
}

// stringsIn collects every string value inside a decoded JSON value, in order.
func stringsIn(v any, out *[]string) {
	switch x := v.(type) {
	case string:
		*out = append(*out, x)
	case []any:
		for _, e := range x {
			stringsIn(e, out)
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			stringsIn(x[k], out)
		}
	}
}

// log records r and returns its place in the record.
func (s *Server) log(r Request) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r)
	return len(s.requests) - 1
}

// complete replaces the record at i, logged when its answer started, with the request as it ended.
func (s *Server) complete(i int, r Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests[i] = r
}

// abs resolves a turn's path against the scenario's directory.
func (s *Server) abs(p string) string {
	if p == "" || filepath.IsAbs(p) || s.sc.Dir == "" {
		return p
	}
	return filepath.Join(s.sc.Dir, p)
}

// secretHeaders carry credentials; their values are never logged.
var secretHeaders = map[string]bool{
	"authorization": true, "x-api-key": true, "x-goog-api-key": true, "api-key": true, "cookie": true,
	"proxy-authorization": true, "chatgpt-account-id": true,
}

func redactHeader(h http.Header) http.Header {
	out := h.Clone()
	for k := range out {
		if secretHeaders[strings.ToLower(k)] {
			out[k] = []string{"REDACTED"}
		}
	}
	return out
}

func redactQuery(r *http.Request) string {
	q := r.URL.Query()
	if q.Has("key") {
		q.Set("key", "REDACTED")
	}
	return q.Encode()
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	raw, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	req := Request{
		Method: r.Method, Path: r.URL.Path, Query: redactQuery(r), Header: redactHeader(r.Header),
		RawBody: raw, Turn: -1, At: at,
	}
	if len(bytes.TrimSpace(raw)) > 0 {
		var body any
		if json.Unmarshal(raw, &body) == nil {
			req.Body = body
		}
	}
	// The request is on record once its answer starts, not only once the handler returns: a CLI that has read
	// the answer's last event may end its turn, and a test ask what the turn sent, before the handler is done
	// (codex's typed line was missing from UserTexts after its turn had ended). The entry is completed at the end.
	logged := -1
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	rec.started = func(status int) {
		snap := req
		snap.Status = status
		logged = s.log(snap)
	}
	defer func() {
		req.Status, req.Took = rec.status, time.Since(at)
		if logged >= 0 {
			s.complete(logged, req)
		} else {
			s.log(req)
		}
	}()

	path := r.URL.Path
	switch {
	case path == "/v1/messages" && r.Method == http.MethodPost:
		req.Provider = "anthropic"
		s.anthropicMessages(r.Context(), rec, raw, &req)
	case path == "/v1/messages/count_tokens" && s.sc.Gateway:
		writeJSON(rec, http.StatusNotFound, map[string]any{"error": map[string]any{
			"type": "not_found_error", "message": "modelserver gateway: no such endpoint"}})
	case path == "/v1/messages/count_tokens":
		writeJSON(rec, http.StatusOK, map[string]any{"input_tokens": len(raw)/4 + 1})
	case strings.HasSuffix(path, "/responses") && isWebSocket(r):
		// codex tries a websocket first; refusing the upgrade at once makes it fall back to HTTP SSE.
		writeJSON(rec, http.StatusUpgradeRequired, map[string]any{"error": map[string]any{
			"message": "websockets are not supported here", "type": "invalid_request_error"}})
	case strings.HasSuffix(path, "/responses") && r.Method == http.MethodPost:
		req.Provider = "openai"
		s.openaiResponses(r.Context(), rec, raw, &req)
	case strings.HasPrefix(path, "/v1beta/models/") || strings.HasPrefix(path, "/v1/models/") && strings.Contains(path, ":"):
		req.Provider = "gemini"
		s.gemini(rec, r, raw, &req)
	case path == "/" && r.Method == http.MethodHead:
		// claude probes the base URL at start-up.
		rec.WriteHeader(http.StatusOK)
	case strings.HasSuffix(path, "/models"):
		writeJSON(rec, http.StatusOK, modelList(path))
	default:
		writeJSON(rec, http.StatusNotFound, map[string]any{"error": map[string]any{
			"type": "not_found_error", "message": "modelserver: no such endpoint " + r.Method + " " + path}})
	}
}

func isWebSocket(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

func modelList(path string) any {
	if strings.HasPrefix(path, "/v1beta") {
		return map[string]any{"models": []any{map[string]any{"name": "models/gemini-2.5-pro"}}}
	}
	return map[string]any{"object": "list", "data": []any{
		map[string]any{"id": "claude-sonnet-4-5", "type": "model", "object": "model"},
		map[string]any{"id": "gpt-5", "object": "model"},
	}}
}

// dripWriter writes its first left bytes one at a time, every apart, flushing each (Turn.DripEvery).
type dripWriter struct {
	http.ResponseWriter
	ctx   context.Context
	every time.Duration
	left  int
}

func (d *dripWriter) Write(p []byte) (int, error) {
	n := 0
	for d.left > 0 && n < len(p) {
		if _, err := d.ResponseWriter.Write(p[n : n+1]); err != nil {
			return n, err
		}
		n++
		d.left--
		d.Flush()
		select {
		case <-d.ctx.Done():
			return n, d.ctx.Err()
		case <-time.After(d.every):
		}
	}
	m, err := d.ResponseWriter.Write(p[n:])
	return n + m, err
}

func (d *dripWriter) Flush() {
	if f, ok := d.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

type statusRecorder struct {
	http.ResponseWriter
	status  int
	started func(status int) // called once, as the answer starts
}

func (r *statusRecorder) start(code int) {
	if f := r.started; f != nil {
		r.started = nil
		f(code)
	}
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.start(code)
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	r.start(r.status)
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// sse writes server-sent events and flushes each.
type sse struct{ w http.ResponseWriter }

func startSSE(w http.ResponseWriter) sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return sse{w}
}

// event writes one event; an empty name writes a data-only event (Gemini's shape).
func (e sse) event(name string, data any) {
	b, _ := json.Marshal(data)
	if name != "" {
		_, _ = io.WriteString(e.w, "event: "+name+"\n")
	}
	_, _ = io.WriteString(e.w, "data: "+string(b)+"\n\n")
	if f, ok := e.w.(http.Flusher); ok {
		f.Flush()
	}
}
