// Package claude drives Claude Code in one long-lived process per conversation: `claude -p --input-format
// stream-json --output-format stream-json --verbose --permission-prompt-tool stdio`. User messages are JSON lines
// on stdin; claude writes its session as JSON lines on stdout and asks for tool permissions with control
// requests (subtype can_use_tool) that ace answers with control responses on stdin. AskUserQuestion comes the
// same way: the answer is the tool's input with an "answers" map added. Verified with claude 2.1.197 and 2.1.331.
package claude

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/aceworks/ace/pkg/live"
)

// LiveFlags put claude in its streaming protocol mode. --permission-prompt-tool stdio sends every permission
// prompt to ace as a control request; without it claude denies what it would ask a human about.
var LiveFlags = []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
	"--permission-prompt-tool", "stdio"}

// LiveHandshakeTimeout bounds the initialize control request when the caller's context has no deadline.
var LiveHandshakeTimeout = 60 * time.Second

// LiveConv is one claude process holding one session.
type LiveConv struct {
	live.Frame
	sessionID string

	mu      sync.Mutex
	next    int
	pending map[string]chan controlResponse // our control requests by request_id
	limited bool                            // a Limit was emitted in the running turn
}

var _ live.Conversation = (*LiveConv)(nil)

// StartLive starts claude and completes the initialize control request, which proves the protocol works; ctx bounds
// that handshake, not the process (Close ends it). The session ID is chosen here (--session-id) so that it is
// known before the first turn; with opts.Resume claude continues that session under the same ID.
func StartLive(ctx context.Context, opts live.Options) (*LiveConv, error) {
	c := &LiveConv{pending: map[string]chan controlResponse{}}
	args := append([]string(nil), LiveFlags...)
	if opts.Resume != "" {
		c.sessionID = opts.Resume
		args = append(args, "--resume", opts.Resume)
	} else {
		c.sessionID = newUUID()
		args = append(args, "--session-id", c.sessionID)
	}
	return live.Started(c, c.Start(ctx, opts, live.CLI{Name: "claude", Args: args,
		HandshakeTimeout: LiveHandshakeTimeout, Read: c.read, Handshake: c.handshake, StartTurn: c.startTurn}))
}

func (c *LiveConv) handshake(ctx context.Context, _ live.Options) error {
	if _, err := c.control(ctx, map[string]any{"subtype": "initialize"}); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	return nil
}

// SessionID implements live.Conversation.
func (c *LiveConv) SessionID() string { return c.sessionID }

// startTurn writes one user message of texts, each its own text block: the messages sent while a turn ran wait in
// the Frame's gate for the next turn. claude itself would fold a message that arrives mid-turn into the running
// turn, the model reading it wrapped in claude's words ("The user sent a new message while you were working: …"
// in 2.1.197 and 2.1.331), not as the user's text; and messages queued in claude for its next turn are joined
// into one text. Priority "later" (claude's default is "next": fold into the running turn) keeps the message out
// of a turn claude might have started by itself, its own queue holding it for the next turn instead.
func (c *LiveConv) startTurn(_ context.Context, texts []string) error {
	var content any = texts[0]
	if len(texts) > 1 {
		blocks := make([]any, len(texts))
		for i, t := range texts {
			blocks[i] = map[string]any{"type": "text", "text": t}
		}
		content = blocks
	}
	return c.writeJSON(map[string]any{"type": "user", "session_id": "", "parent_tool_use_id": nil, "priority": "later",
		"message": map[string]any{"role": "user", "content": content}})
}

// Interrupt sends the interrupt control request: the running turn ends with a result.
func (c *LiveConv) Interrupt(ctx context.Context) error {
	if !c.Interrupting() {
		return nil
	}
	_, err := c.control(ctx, map[string]any{"subtype": "interrupt"})
	return err
}

func (c *LiveConv) writeJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("claude: encode: %w", err)
	}
	return c.WriteLine(b)
}

type controlResponse struct {
	Subtype   string          `json:"subtype"` // success or error
	RequestID string          `json:"request_id"`
	Response  json.RawMessage `json:"response"`
	Error     string          `json:"error"`
}

// control sends a control request of ours and waits for its response.
func (c *LiveConv) control(ctx context.Context, request map[string]any) (json.RawMessage, error) {
	c.mu.Lock()
	c.next++
	id := fmt.Sprintf("ace-%d", c.next)
	ch := make(chan controlResponse, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}()
	if err := c.writeJSON(map[string]any{"type": "control_request", "request_id": id, "request": request}); err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		if r.Subtype == "error" {
			return nil, fmt.Errorf("claude: %s: %s", request["subtype"], r.Error)
		}
		return r.Response, nil
	case <-c.Exited():
		return nil, fmt.Errorf("claude: %s: %w", request["subtype"], live.ErrClosed)
	case <-ctx.Done():
		return nil, fmt.Errorf("claude: %s: %w", request["subtype"], ctx.Err())
	}
}

// line is one stdout line; which fields are set depends on Type.
type line struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype"`
	Message *struct {
		Content json.RawMessage `json:"content"` // a string or blocks
	} `json:"message"`
	// control_request (claude asking ace) and control_response (claude answering ace).
	RequestID string          `json:"request_id"`
	Request   json.RawMessage `json:"request"`
	Response  controlResponse `json:"response"`
	// result
	IsError        bool   `json:"is_error"`
	Result         string `json:"result"`
	StopReason     string `json:"stop_reason"`
	APIErrorStatus int    `json:"api_error_status"`
	Usage          *struct {
		InputTokens              int64 `json:"input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	} `json:"usage"`
	// rate_limit_event
	RateLimitInfo *struct {
		Status   string `json:"status"`
		ResetsAt int64  `json:"resetsAt"`
	} `json:"rate_limit_info"`
	// system/api_retry
	Attempt     int    `json:"attempt"`
	MaxRetries  int    `json:"max_retries"`
	ErrorStatus int    `json:"error_status"`
	Error       string `json:"error"`
}

func (c *LiveConv) read(stdout io.Reader) {
	br := bufio.NewReaderSize(stdout, 64<<10)
	for {
		b, err := br.ReadBytes('\n')
		if t := bytes.TrimSpace(b); len(t) > 0 {
			c.handle(t)
		}
		if err != nil {
			return
		}
	}
}

func (c *LiveConv) handle(b []byte) {
	var m line
	if err := json.Unmarshal(b, &m); err != nil {
		return // not JSON: claude prints nothing else on stdout in this mode; a stray line is no event
	}
	switch m.Type {
	case "assistant":
		if m.Message == nil {
			return
		}
		for _, bl := range blocks(m.Message.Content) {
			switch bl.Type {
			case "text":
				// A failed request (the limit) comes as a synthetic assistant message whose text is the error;
				// the Limit and the result carry it.
				if m.Error == "" && bl.Text != "" {
					c.Emit(live.Text{Text: bl.Text})
				}
			case "tool_use":
				c.Emit(live.ToolCall{ID: bl.ID, Name: bl.Name, Input: compact(bl.Input)})
			}
		}
	case "user":
		if m.Message == nil {
			return
		}
		for _, bl := range blocks(m.Message.Content) {
			if bl.Type == "tool_result" {
				c.Emit(live.ToolResult{ID: bl.ToolUseID, Output: textOf(bl.Content), IsError: bl.IsError})
			}
		}
	case "control_request":
		c.controlRequest(m.RequestID, m.Request)
	case "control_cancel_request":
		// claude taking back its request: 2.1.197 and 2.1.331 send it for a permission or question still waiting
		// when the turn is interrupted, before the turn's result.
		c.Withdraw(m.RequestID)
	case "control_response":
		c.mu.Lock()
		ch, ok := c.pending[m.Response.RequestID]
		c.mu.Unlock()
		if ok {
			ch <- m.Response
		}
	case "rate_limit_event":
		if m.RateLimitInfo != nil && m.RateLimitInfo.Status == "rejected" {
			l := live.Limit{Message: "rate limit: rejected"}
			if m.RateLimitInfo.ResetsAt > 0 {
				l.ResetsAt = time.Unix(m.RateLimitInfo.ResetsAt, 0)
			}
			c.setLimited()
			c.Emit(l)
		}
	case "system":
		if m.Subtype == "api_retry" {
			c.Emit(live.Error{Retrying: true, Attempt: m.Attempt, Max: m.MaxRetries,
				Message: apiRetryText(m.ErrorStatus, m.Error)})
		}
	case "result":
		c.result(m)
	}
}

func (c *LiveConv) setLimited() {
	c.mu.Lock()
	c.limited = true
	c.mu.Unlock()
}

// result ends a turn. Its usage is the turn's own: the sum of the turn's model requests (side requests such as
// the session title excluded), while modelUsage is cumulative.
func (c *LiveConv) result(m line) {
	c.mu.Lock()
	limited := c.limited
	c.limited = false
	c.mu.Unlock()
	c.EndTurn(func(interrupted bool) { c.turnDone(m, limited, interrupted) })
}

// turnDone emits the end of the turn whose result is m.
func (c *LiveConv) turnDone(m line, limited, interrupted bool) {
	d := live.TurnDone{Stop: live.Completed, Reason: m.StopReason, Result: m.Result}
	switch {
	case m.Subtype == "success" && !m.IsError:
	case interrupted:
		// An interrupted turn ends as subtype error_during_execution: no error of the agent's.
		d.Stop, d.Reason = live.Interrupted, m.Subtype
	default:
		d.Stop, d.Reason, d.Err = live.Failed, m.Subtype, m.Result
		if d.Err == "" {
			d.Err = m.Subtype
		}
	}
	if u := m.Usage; u != nil {
		d.Usage = live.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
			CachedTokens: u.CacheReadInputTokens, CacheWriteTokens: u.CacheCreationInputTokens}
	}
	// An API-key 429 that claude does not wait out (retry-after over a minute) has no rate_limit_event.
	if m.IsError && m.APIErrorStatus == 429 && !limited {
		c.Emit(live.Limit{Message: m.Result})
	}
	c.Emit(d)
}

type canUseTool struct {
	Subtype     string          `json:"subtype"`
	ToolName    string          `json:"tool_name"`
	Input       json.RawMessage `json:"input"`
	ToolUseID   string          `json:"tool_use_id"`
	Description string          `json:"description"`
}

// controlRequest answers claude's control requests: can_use_tool becomes a Permission, or a Question for
// AskUserQuestion; others (hook callbacks, MCP messages for SDK servers ace does not declare) get an error.
func (c *LiveConv) controlRequest(id string, raw json.RawMessage) {
	var r canUseTool
	_ = json.Unmarshal(raw, &r)
	if r.Subtype != "can_use_tool" {
		_ = c.respond(id, nil, "ace does not handle control request "+r.Subtype)
		return
	}
	once := c.Ask(id, r.ToolUseID, nil)
	if r.ToolName == "AskUserQuestion" {
		if q, ok := c.question(id, r, once); ok {
			c.Emit(q)
			return
		}
	}
	c.Emit(live.NewPermission(r.ToolUseID, r.ToolName, r.Description, compact(r.Input),
		func(_ context.Context, allow bool, reason string) error {
			return once.Answer(func() error {
				if allow {
					// updatedInput is required by the protocol: the input unchanged.
					return c.answer(id, map[string]any{"behavior": "allow", "updatedInput": r.Input})
				}
				if reason == "" {
					reason = "The user denied this tool call."
				}
				return c.answer(id, map[string]any{"behavior": "deny", "message": reason})
			})
		}))
}

// answer answers can_use_tool request id, which is then no longer open.
func (c *LiveConv) answer(id string, response any) error {
	c.Answered(id)
	return c.respond(id, response, "")
}

// question turns AskUserQuestion's input into a Question; the answer allows the tool with the input plus
// "answers" (question text → answer), which claude gives the model as the tool's result.
func (c *LiveConv) question(id string, r canUseTool, once *live.Once) (live.Question, bool) {
	var in struct {
		Questions []struct {
			Question    string `json:"question"`
			Header      string `json:"header"`
			MultiSelect bool   `json:"multiSelect"`
			Options     []struct {
				Label string `json:"label"`
			} `json:"options"`
		} `json:"questions"`
	}
	if json.Unmarshal(r.Input, &in) != nil || len(in.Questions) == 0 {
		return live.Question{}, false
	}
	asks := make([]live.Ask, len(in.Questions))
	for i, q := range in.Questions {
		asks[i] = live.Ask{Header: q.Header, Text: q.Question, Multi: q.MultiSelect}
		for _, o := range q.Options {
			asks[i].Options = append(asks[i].Options, o.Label)
		}
	}
	return live.NewQuestion(r.ToolUseID, asks, func(_ context.Context, answers []string) error {
		return once.Answer(func() error {
			var input map[string]any
			if err := json.Unmarshal(r.Input, &input); err != nil {
				return fmt.Errorf("claude: question input: %w", err)
			}
			m := map[string]string{}
			for i, a := range asks {
				m[a.Text] = answers[i]
			}
			input["answers"] = m
			return c.answer(id, map[string]any{"behavior": "allow", "updatedInput": input})
		})
	}), true
}

// respond answers claude's control request id with response, or with an error when errMsg is set.
func (c *LiveConv) respond(id string, response any, errMsg string) error {
	r := map[string]any{"subtype": "success", "request_id": id, "response": response}
	if errMsg != "" {
		r = map[string]any{"subtype": "error", "request_id": id, "error": errMsg}
	}
	return c.writeJSON(map[string]any{"type": "control_response", "response": r})
}

func blocks(content json.RawMessage) []block {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return []block{{Type: "text", Text: s}}
	}
	var bs []block
	_ = json.Unmarshal(content, &bs)
	return bs
}

// textOf is a tool result's text: a string, or the text of its blocks.
func textOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var bs []block
	if json.Unmarshal(raw, &bs) == nil {
		var parts []string
		for _, b := range bs {
			if b.Type == "text" {
				parts = append(parts, b.Text)
			}
		}
		return strings.Join(parts, "\n")
	}
	return string(raw)
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// newUUID is a random (version 4) UUID: claude's --session-id wants one.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
