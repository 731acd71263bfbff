// Package codex drives Codex in one long-lived `codex app-server` process per conversation: JSON-RPC 2.0, one
// message per line on stdio. ace sends initialize (then the initialized notification), thread/start (or
// thread/resume) once, and turn/start per prompt; codex streams item/*, thread/tokenUsage/updated and
// turn/completed notifications and asks for approvals with requests of its own
// (item/commandExecution/requestApproval, item/fileChange/requestApproval). Verified with codex-cli 0.169.0
// against `codex app-server generate-json-schema`.
//
// Approval policy and sandbox come from the user's configuration or from -c flags in Options.Argv, e.g.
// -c approval_policy="on-request" -c sandbox_mode="read-only" (a file write then asks for approval).
package codex

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/aceworks/ace/pkg/live"
)

// LiveArgs are appended to Options.Argv, after the user's flags: the app-server subcommand puts codex in its
// JSON-RPC mode, and the feature before it lets the model ask the human a question with options
// (request_user_input, which comes as item/tool/requestUserInput) in the default collaboration mode. Without it
// 0.169.0 declares that tool "only available in Plan mode" and fails a call of it in the default mode
// ("request_user_input is unavailable in Default mode"); with it the tool's description is the only change to
// what the model is told (its requests compared with and without), and the mode stays the default one.
var LiveArgs = []string{"-c", "features.default_mode_request_user_input=true", "app-server"}

// ClientName and ClientVersion introduce ace in initialize (codex puts them in its user agent).
var (
	ClientName    = "ace"
	ClientVersion = "0.1.0"
)

// LiveHandshakeTimeout bounds initialize and thread/start when the caller's context has no deadline.
var LiveHandshakeTimeout = 60 * time.Second

// LiveConv is one codex app-server holding one thread.
type LiveConv struct {
	live.Frame
	conn   *live.Conn
	thread string
	model  string // the thread's model, which each turn's usage is priced by

	mu        sync.Mutex
	active    string              // the running turn's ID, empty when idle
	total     liveTokens          // the thread's usage so far (thread/tokenUsage/updated)
	turnStart liveTokens          // total when the running turn started
	changes   map[string][]string // file paths of fileChange items, by item ID, for their approvals
}

var _ live.Conversation = (*LiveConv)(nil)

// StartLive starts codex app-server, initializes it and starts (or resumes) a thread in opts.Dir; ctx bounds that
// handshake, not the process (Close ends it).
func StartLive(ctx context.Context, opts live.Options) (*LiveConv, error) {
	c := &LiveConv{changes: map[string][]string{}}
	c.conn = live.NewConn(c.WriteLine)
	return live.Started(c, c.Start(ctx, opts, live.CLI{Name: "codex", Args: LiveArgs,
		HandshakeTimeout: LiveHandshakeTimeout, Read: c.serve, Handshake: c.handshake, StartTurn: c.startTurn}))
}

func (c *LiveConv) handshake(ctx context.Context, opts live.Options) error {
	if err := c.conn.Call(ctx, "initialize", map[string]any{
		"clientInfo": map[string]any{"name": ClientName, "title": ClientName, "version": ClientVersion},
	}, nil); err != nil {
		return err
	}
	if err := c.conn.Notify("initialized", nil); err != nil {
		return err
	}
	var res struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
		Model string `json:"model"` // the one the thread uses: the user's, or codex's default
	}
	params := map[string]any{"cwd": opts.Dir}
	method := "thread/start"
	if opts.Resume != "" {
		method, params["threadId"] = "thread/resume", opts.Resume
	}
	if err := c.conn.Call(ctx, method, params, &res); err != nil {
		return err
	}
	if res.Thread.ID == "" {
		return fmt.Errorf("%s returned no thread ID", method)
	}
	c.thread, c.model = res.Thread.ID, res.Model
	return nil
}

// SessionID is the thread ID (thread/resume, `codex resume <id>`).
func (c *LiveConv) SessionID() string { return c.thread }

// startTurn starts a turn whose input is texts, in order: the messages sent while a turn ran wait in the
// Frame's gate and start the next turn together. codex could steer the running turn instead (turn/steer), but
// in 0.169 a steer sent while an approval was pending let the turn complete before the approved patch was
// applied (item/completed for the fileChange after turn/completed), so ace would see the turn end before its
// change.
func (c *LiveConv) startTurn(ctx context.Context, texts []string) error {
	input := make([]any, len(texts))
	for i, t := range texts {
		input[i] = map[string]any{"type": "text", "text": t, "text_elements": []any{}}
	}
	if err := c.conn.Call(ctx, "turn/start", map[string]any{"threadId": c.thread, "input": input}, nil); err != nil {
		return fmt.Errorf("codex: %w", err)
	}
	return nil
}

// Interrupt implements live.Conversation (turn/interrupt); the turn completes with status "interrupted".
func (c *LiveConv) Interrupt(ctx context.Context) error {
	c.mu.Lock()
	active := c.active
	c.mu.Unlock()
	if active == "" {
		return nil
	}
	if err := c.conn.Call(ctx, "turn/interrupt", map[string]any{"threadId": c.thread, "turnId": active}, nil); err != nil {
		return fmt.Errorf("codex: %w", err)
	}
	return nil
}

func (c *LiveConv) serve(stdout io.Reader) { _ = c.conn.Serve(stdout, c.handle, nil) }

// liveTokens is codex's TokenUsageBreakdown; inputTokens includes the cached ones.
type liveTokens struct {
	InputTokens       int64 `json:"inputTokens"`
	CachedInputTokens int64 `json:"cachedInputTokens"`
	CacheWriteTokens  int64 `json:"cacheWriteInputTokens"`
	OutputTokens      int64 `json:"outputTokens"`
}

func (t liveTokens) minus(u liveTokens) liveTokens {
	return liveTokens{t.InputTokens - u.InputTokens, t.CachedInputTokens - u.CachedInputTokens,
		t.CacheWriteTokens - u.CacheWriteTokens, t.OutputTokens - u.OutputTokens}
}

type turnError struct {
	Message        string          `json:"message"`
	CodexErrorInfo json.RawMessage `json:"codexErrorInfo"` // a string, or an object for HTTP failures
}

type liveItem struct {
	Type             string `json:"type"`
	ID               string `json:"id"`
	Text             string `json:"text"`
	Command          string `json:"command"`
	AggregatedOutput string `json:"aggregatedOutput"`
	ExitCode         *int   `json:"exitCode"`
	Status           string `json:"status"`
	Changes          []struct {
		Path string `json:"path"`
	} `json:"changes"`
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Result    json.RawMessage `json:"result"`
	Error     json.RawMessage `json:"error"`
	Query     string          `json:"query"`
}

type params struct {
	Turn struct {
		ID     string     `json:"id"`
		Status string     `json:"status"`
		Error  *turnError `json:"error"`
	} `json:"turn"`
	Item       liveItem `json:"item"`
	TokenUsage struct {
		Total liveTokens `json:"total"`
	} `json:"tokenUsage"`
	Error     turnError `json:"error"`
	WillRetry bool      `json:"willRetry"`
	// Approval requests.
	ItemID    string          `json:"itemId"`
	Reason    string          `json:"reason"`
	Command   json.RawMessage `json:"command"` // a string (v2) or argv (v1 execCommandApproval)
	Questions []struct {
		ID       string `json:"id"`
		Header   string `json:"header"`
		Question string `json:"question"`
		Options  []struct {
			Label string `json:"label"`
		} `json:"options"`
	} `json:"questions"`
	CallID      string                     `json:"callId"`
	FileChanges map[string]json.RawMessage `json:"fileChanges"`
	// serverRequest/resolved
	RequestID json.RawMessage `json:"requestId"`
}

// handle runs on the reader goroutine, in the order codex wrote.
func (c *LiveConv) handle(m live.Incoming) {
	var p params
	_ = json.Unmarshal(m.Params, &p)
	switch m.Method {
	case "turn/started":
		c.mu.Lock()
		c.active = p.Turn.ID
		c.turnStart = c.total
		c.mu.Unlock()
	case "thread/tokenUsage/updated":
		c.mu.Lock()
		c.total = p.TokenUsage.Total
		c.mu.Unlock()
	case "turn/completed":
		c.turnCompleted(p)
	case "item/started":
		c.itemStarted(p.Item)
	case "item/completed":
		c.itemCompleted(p.Item)
	case "error":
		// A usage limit fails the turn (willRetry false); turn/completed follows with status "failed".
		if info := errorInfo(p.Error.CodexErrorInfo); !p.WillRetry && (info == "usageLimitExceeded" || info == "rateLimitExceeded") {
			c.Emit(live.Limit{Message: p.Error.Message, ResetsAt: resetTime(p.Error.Message, time.Now())})
			return
		}
		e := live.Error{Message: p.Error.Message, Retrying: p.WillRetry}
		if ev, ok := retryEvent(p.Error.Message); ok {
			e.Retrying, e.Attempt, e.Max, e.Message = true, ev.Attempt, ev.MaxAttempts, ev.Text
		}
		c.Emit(e)
	case "item/commandExecution/requestApproval":
		var cmd string
		_ = json.Unmarshal(p.Command, &cmd)
		c.Emit(c.permission(m, p.ItemID, "shell", p.Reason, cmd, "accept", "decline"))
	case "item/fileChange/requestApproval":
		c.mu.Lock()
		paths := c.changes[p.ItemID]
		c.mu.Unlock()
		c.Emit(c.permission(m, p.ItemID, "file_change", p.Reason, strings.Join(paths, "\n"), "accept", "decline"))
	case "execCommandApproval": // the v1 API's request, still in the schema
		var argv []string
		_ = json.Unmarshal(p.Command, &argv)
		c.Emit(c.permission(m, p.CallID, "shell", p.Reason, strings.Join(argv, " "), "approved", "denied"))
	case "applyPatchApproval":
		paths := make([]string, 0, len(p.FileChanges))
		for path := range p.FileChanges {
			paths = append(paths, path)
		}
		c.Emit(c.permission(m, p.CallID, "file_change", p.Reason, strings.Join(paths, "\n"), "approved", "denied"))
	case "item/tool/requestUserInput":
		c.Emit(c.question(m, p))
	case "serverRequest/resolved":
		// codex done with its request. It follows ace's answer; for a request ace had not answered it is codex
		// taking it back: 0.169.0 resolves a pending approval or question so when its turn is interrupted, after
		// turn/completed.
		c.Withdraw(requestKey(p.RequestID))
	default:
		if m.ID != nil {
			// Requests ace does not serve (MCP elicitations, dynamic tools, auth refresh) fail rather than hang.
			_ = m.ReplyError(live.MethodNotFound, "ace does not handle "+m.Method)
		}
	}
}

func (c *LiveConv) turnCompleted(p params) {
	c.mu.Lock()
	used := c.total.minus(c.turnStart)
	c.turnStart = c.total
	c.active = ""
	c.mu.Unlock()
	d := live.TurnDone{Stop: live.Completed, Reason: p.Turn.Status, Model: c.model, Usage: live.Usage{InputTokens: used.InputTokens - used.CachedInputTokens,
		CachedTokens: used.CachedInputTokens, CacheWriteTokens: used.CacheWriteTokens, OutputTokens: used.OutputTokens}}
	switch {
	case p.Turn.Status == "interrupted":
		d.Stop = live.Interrupted
	case p.Turn.Status == "failed" || p.Turn.Error != nil:
		d.Stop, d.Err = live.Failed, "the turn failed"
		if p.Turn.Error != nil {
			d.Err = p.Turn.Error.Message
		}
	}
	c.EndTurn(func(bool) { c.Emit(d) })
}

func (c *LiveConv) itemStarted(it liveItem) {
	switch it.Type {
	case "commandExecution":
		c.Emit(live.ToolCall{ID: it.ID, Name: "shell", Input: it.Command})
	case "fileChange":
		paths := make([]string, 0, len(it.Changes))
		for _, ch := range it.Changes {
			paths = append(paths, ch.Path)
		}
		c.mu.Lock()
		c.changes[it.ID] = paths
		c.mu.Unlock()
		c.Emit(live.ToolCall{ID: it.ID, Name: "file_change", Input: strings.Join(paths, "\n")})
	case "mcpToolCall":
		c.Emit(live.ToolCall{ID: it.ID, Name: it.Server + "." + it.Tool, Input: string(it.Arguments)})
	case "webSearch":
		c.Emit(live.ToolCall{ID: it.ID, Name: "web_search", Input: it.Query})
	}
}

func (c *LiveConv) itemCompleted(it liveItem) {
	switch it.Type {
	case "agentMessage":
		if it.Text != "" {
			c.Emit(live.Text{Text: it.Text})
		}
	case "commandExecution":
		c.Emit(live.ToolResult{ID: it.ID, Output: it.AggregatedOutput,
			IsError: it.Status != "completed" || it.ExitCode != nil && *it.ExitCode != 0})
	case "fileChange":
		c.mu.Lock()
		delete(c.changes, it.ID)
		c.mu.Unlock()
		c.Emit(live.ToolResult{ID: it.ID, Output: it.Status, IsError: it.Status != "completed"})
	case "mcpToolCall":
		out, isErr := string(it.Result), it.Status == "failed"
		if isErr && len(it.Error) > 0 {
			out = string(it.Error)
		}
		c.Emit(live.ToolResult{ID: it.ID, Output: out, IsError: isErr})
	case "webSearch":
		c.Emit(live.ToolResult{ID: it.ID})
	}
}

// permission is an approval request as a Permission; the decision values differ between codex's v2 and v1 APIs.
func (c *LiveConv) permission(m live.Incoming, id, tool, reason, input, accept, decline string) live.Permission {
	once := c.open(m, id)
	return live.NewPermission(id, tool, reason, input, func(_ context.Context, allow bool, _ string) error {
		return once.Answer(func() error {
			d := decline
			if allow {
				d = accept
			}
			return c.reply(m, map[string]any{"decision": d})
		})
	})
}

// open records request m, for item (or v1 call) id, as waiting for its answer.
func (c *LiveConv) open(m live.Incoming, id string) *live.Once {
	return c.Ask(requestKey(m.ID), id, nil)
}

// reply answers request m, which is then no longer open.
func (c *LiveConv) reply(m live.Incoming, result any) error {
	c.Answered(requestKey(m.ID))
	return m.Reply(result)
}

// requestKey is a JSON-RPC id as a map key: codex numbers its requests, and serverRequest/resolved names one
// in the same JSON.
func requestKey(id json.RawMessage) string { return string(bytes.TrimSpace(id)) }

// question is request_user_input as a Question; each answer goes back under its question's ID.
func (c *LiveConv) question(m live.Incoming, p params) live.Question {
	asks := make([]live.Ask, len(p.Questions))
	for i, q := range p.Questions {
		asks[i] = live.Ask{Header: q.Header, Text: q.Question}
		for _, o := range q.Options {
			asks[i].Options = append(asks[i].Options, o.Label)
		}
	}
	once := c.open(m, p.ItemID)
	return live.NewQuestion(p.ItemID, asks, func(_ context.Context, answers []string) error {
		return once.Answer(func() error {
			out := map[string]any{}
			for i, q := range p.Questions {
				out[q.ID] = map[string]any{"answers": []string{answers[i]}}
			}
			return c.reply(m, map[string]any{"answers": out})
		})
	})
}

// errorInfo is codexErrorInfo's name: the string, or the key of the object it is for HTTP failures.
func errorInfo(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var m map[string]json.RawMessage
	_ = json.Unmarshal(raw, &m)
	for k := range m {
		return k
	}
	return ""
}

// tryAgainAt finds codex's reset time in its usage-limit message: "… or try again at 2:13 PM." (the local
// clock, no date or zone).
var tryAgainAt = regexp.MustCompile(`try again at (\d{1,2}:\d{2}\s?[AP]M)`)

// resetTime is the next time of day the message names, after now in now's zone; zero when it names none.
func resetTime(msg string, now time.Time) time.Time {
	m := tryAgainAt.FindStringSubmatch(msg)
	if m == nil {
		return time.Time{}
	}
	clock, err := time.Parse("3:04PM", strings.ReplaceAll(m[1], " ", ""))
	if err != nil {
		return time.Time{}
	}
	t := time.Date(now.Year(), now.Month(), now.Day(), clock.Hour(), clock.Minute(), 0, 0, now.Location())
	if t.Before(now.Add(-time.Minute)) {
		t = t.AddDate(0, 0, 1)
	}
	return t
}
