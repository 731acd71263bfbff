// Package gemini drives Gemini CLI in one long-lived `gemini --acp` process per conversation: the Agent Client
// Protocol, JSON-RPC 2.0 with one message per line on stdio. ace sends initialize and session/new (or
// session/load) once and session/prompt per prompt; gemini streams session/update notifications (message chunks,
// tool calls and their updates) and asks before a tool runs with session/request_permission. The prompt's
// response ends the turn, with the turn's tokens in _meta.quota. Verified with gemini-cli 0.61.0 (its bundled
// source: packages/cli/src/acp).
package gemini

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/aceworks/ace/pkg/live"
)

// LiveFlag puts gemini in ACP mode (0.61 still accepts the older --experimental-acp, deprecated).
const LiveFlag = "--acp"

// ProtocolVersion is the ACP version ace speaks.
const ProtocolVersion = 1

// LiveHandshakeTimeout bounds initialize and session/new when the caller's context has no deadline.
var LiveHandshakeTimeout = 90 * time.Second

// LiveConv is one gemini process holding one ACP session.
type LiveConv struct {
	live.Frame
	conn    *live.Conn
	session string

	mu      sync.Mutex // also orders the events emitted by the reader and by the prompts
	text    strings.Builder
	seen    map[string]bool // tool calls already announced
	loading bool            // session/load replays the history as updates: not events of this conversation
	// lastUpdate is when the last update came while loading.
	lastUpdate time.Time
}

var _ live.Conversation = (*LiveConv)(nil)

// StartLive starts gemini --acp, initializes it and opens (or loads) a session in opts.Dir; ctx bounds that
// handshake, not the process (Close ends it).
func StartLive(ctx context.Context, opts live.Options) (*LiveConv, error) {
	c := &LiveConv{seen: map[string]bool{}}
	c.conn = live.NewConn(c.WriteLine)
	return live.Started(c, c.Start(ctx, opts, live.CLI{Name: "gemini", Args: []string{LiveFlag},
		HandshakeTimeout: LiveHandshakeTimeout, Read: c.serve, Handshake: c.handshake, StartTurn: c.startTurn}))
}

func (c *LiveConv) handshake(ctx context.Context, opts live.Options) error {
	var init struct {
		ProtocolVersion int `json:"protocolVersion"`
	}
	// No fs or terminal capabilities: gemini reads and writes files and runs commands itself, as in its other
	// modes, instead of asking ace to.
	if err := c.conn.Call(ctx, "initialize", map[string]any{"protocolVersion": ProtocolVersion,
		"clientCapabilities": map[string]any{"fs": map[string]any{"readTextFile": false, "writeTextFile": false},
			"terminal": false}}, &init); err != nil {
		return err
	}
	if init.ProtocolVersion != ProtocolVersion {
		return fmt.Errorf("ACP version %d, ace speaks %d", init.ProtocolVersion, ProtocolVersion)
	}
	if opts.Resume != "" {
		return c.load(ctx, opts)
	}
	var res struct {
		SessionID string `json:"sessionId"`
	}
	if err := c.conn.Call(ctx, "session/new", map[string]any{"cwd": opts.Dir, "mcpServers": []any{}}, &res); err != nil {
		return err
	}
	if res.SessionID == "" {
		return errors.New("session/new returned no session ID")
	}
	c.session = res.SessionID
	return nil
}

// load opens the session opts.Resume with session/load. gemini replays the session's history as updates, most
// of them after its response: they are dropped until the replay has been quiet for ReplayQuiet.
func (c *LiveConv) load(ctx context.Context, opts live.Options) error {
	if err := sameMinute(ctx, opts.Env, opts.Resume); err != nil {
		return err
	}
	c.mu.Lock()
	c.loading = true
	c.lastUpdate = time.Now()
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.loading = false
		c.text.Reset()
		c.mu.Unlock()
	}()
	if err := c.conn.Call(ctx, "session/load", map[string]any{"sessionId": opts.Resume, "cwd": opts.Dir,
		"mcpServers": []any{}}, nil); err != nil {
		return err
	}
	c.session = opts.Resume
	for {
		c.mu.Lock()
		quiet := time.Since(c.lastUpdate)
		c.mu.Unlock()
		if quiet >= ReplayQuiet {
			return nil
		}
		select {
		case <-time.After(ReplayQuiet - quiet):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// ReplayQuiet is how long the history replay after session/load must have been silent before prompts go.
var ReplayQuiet = 300 * time.Millisecond

// sameMinute waits for the next minute when the session's file was created in this one. gemini 0.61 names a
// session's file session-<UTC minute>-<first 8 of its ID>.jsonl; session/load first starts recording that
// session anew, and in the minute the file was created that is the same file: the new records shadow the
// history, the load fails with "No previous sessions found for this project." and the conversation is lost for
// good. A minute later the recording goes to a new file and the load works.
func sameMinute(ctx context.Context, env []string, id string) error {
	home := envValue(env, "GEMINI_CLI_HOME")
	if home == "" {
		home = envValue(env, "HOME")
	}
	if home == "" || len(id) < 8 {
		return nil
	}
	now := time.Now().UTC()
	files, _ := filepath.Glob(filepath.Join(home, ".gemini", "tmp", "*", "chats",
		"session-"+now.Format("2006-01-02T15-04")+"-"+id[:8]+".json*"))
	if len(files) == 0 {
		return nil
	}
	select {
	case <-time.After(now.Truncate(time.Minute).Add(time.Minute + time.Second).Sub(now)):
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for a new minute to load the session: %w", ctx.Err())
	}
}

func envValue(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v
		}
	}
	return ""
}

// SessionID implements live.Conversation (session/load; `gemini --resume` lists it too).
func (c *LiveConv) SessionID() string { return c.session }

// startTurn sends texts as prompts, one at a time, each a turn of its own, on a goroutine of their own: a
// prompt's response ends its turn. gemini cancels a running prompt when another arrives, so the messages sent
// while a turn runs wait in the Frame's gate for it to end.
func (c *LiveConv) startTurn(_ context.Context, texts []string) error {
	go c.prompts(texts)
	return nil
}

// Interrupt sends session/cancel: the running prompt ends with stop reason "cancelled"; held messages follow.
// As ACP requires, permission requests still open are then answered "cancelled": gemini 0.61 waits for them (it
// never withdraws one itself), and each is Withdrawn.
func (c *LiveConv) Interrupt(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := c.conn.Notify("session/cancel", map[string]any{"sessionId": c.session}); err != nil {
		return fmt.Errorf("gemini: %w", err)
	}
	c.mu.Lock() // a request being opened has its Permission event out before its withdrawal
	cancels := c.WithdrawAll()
	c.mu.Unlock()
	for _, cancel := range cancels {
		cancel()
	}
	return nil
}

type promptResult struct {
	StopReason string `json:"stopReason"`
	Meta       struct {
		Quota struct {
			TokenCount struct {
				InputTokens  int64 `json:"input_tokens"`
				OutputTokens int64 `json:"output_tokens"`
			} `json:"token_count"`
		} `json:"quota"`
	} `json:"_meta"`
}

// prompts sends texts one at a time, each turn ending with its response, then ends the gate's turn.
func (c *LiveConv) prompts(texts []string) {
	for _, text := range texts {
		if !c.prompt(text) {
			return // the process is gone: Exit tells
		}
	}
	c.EndTurn(nil)
}

// prompt runs one turn of text; false when the conversation ended instead.
func (c *LiveConv) prompt(text string) bool {
	life := c.Life()
	var res promptResult
	err := c.conn.Call(life, "session/prompt", map[string]any{"sessionId": c.session,
		"prompt": []any{map[string]any{"type": "text", "text": text}}}, &res)
	if errors.Is(err, live.ErrClosed) || life.Err() != nil {
		return false
	}
	// The reader handled every update before the response (one goroutine, in order), so the text is whole.
	c.mu.Lock()
	defer c.mu.Unlock()
	c.flushLocked()
	// A cancelled prompt's response has no _meta: its usage is lost (0.61).
	d := live.TurnDone{Stop: live.Completed, Reason: res.StopReason, Usage: live.Usage{
		InputTokens: res.Meta.Quota.TokenCount.InputTokens, OutputTokens: res.Meta.Quota.TokenCount.OutputTokens}}
	var rpc *live.RPCError
	switch {
	case errors.As(err, &rpc) && rpc.Code == 429:
		// A quota gemini does not retry (a daily one): no reset time in the protocol.
		c.Emit(live.Limit{Message: rpc.Message})
		d.Stop, d.Err = live.Failed, rpc.Message
	case err != nil:
		d.Stop, d.Err = live.Failed, err.Error()
	case res.StopReason == "cancelled":
		d.Stop = live.Interrupted
	}
	c.Emit(d)
	return true
}

// serve reads gemini's messages; the text gathered when its output ends is the last before Exit.
func (c *LiveConv) serve(stdout io.Reader) {
	_ = c.conn.Serve(stdout, c.handle, nil)
	c.mu.Lock()
	c.flushLocked()
	c.mu.Unlock()
}

type toolCall struct {
	ToolCallID string `json:"toolCallId"`
	Status     string `json:"status"`
	Title      string `json:"title"`
	Kind       string `json:"kind"`
	Content    []struct {
		Type    string `json:"type"`
		Path    string `json:"path"`
		Content struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"content"`
	Locations []struct {
		Path string `json:"path"`
	} `json:"locations"`
}

type update struct {
	SessionUpdate string `json:"sessionUpdate"`
	Content       struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

// handle runs on the reader goroutine, in the order gemini wrote.
func (c *LiveConv) handle(m live.Incoming) {
	switch m.Method {
	case "session/update":
		var p struct {
			Update json.RawMessage `json:"update"`
		}
		_ = json.Unmarshal(m.Params, &p)
		c.update(p.Update)
	case "session/request_permission":
		var p struct {
			ToolCall toolCall `json:"toolCall"`
			Options  []option `json:"options"`
		}
		_ = json.Unmarshal(m.Params, &p)
		key := string(m.ID)
		c.mu.Lock()
		once := c.Ask(key, p.ToolCall.ToolCallID, func() { _ = m.Reply(cancelled) })
		c.announceLocked(p.ToolCall)
		c.Emit(permission(m, p.ToolCall, p.Options, once, func() { c.Answered(key) }))
		c.mu.Unlock()
	default:
		if m.ID != nil {
			// fs/* and terminal/* are not offered in initialize; anything else ace does not serve fails.
			_ = m.ReplyError(live.MethodNotFound, "ace does not handle "+m.Method)
		}
	}
}

func (c *LiveConv) update(raw json.RawMessage) {
	var u update
	_ = json.Unmarshal(raw, &u)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.loading {
		c.lastUpdate = time.Now()
		return
	}
	switch u.SessionUpdate {
	case "agent_message_chunk":
		if u.Content.Type == "text" {
			c.text.WriteString(u.Content.Text)
		}
	case "tool_call":
		var tc toolCall
		_ = json.Unmarshal(raw, &tc)
		c.announceLocked(tc)
	case "tool_call_update":
		var tc toolCall
		_ = json.Unmarshal(raw, &tc)
		if tc.Status != "completed" && tc.Status != "failed" {
			return
		}
		c.announceLocked(tc)
		var out []string
		for _, ct := range tc.Content {
			if ct.Type == "content" && ct.Content.Text != "" {
				out = append(out, ct.Content.Text)
			}
		}
		c.Emit(live.ToolResult{ID: tc.ToolCallID, Output: strings.Join(out, "\n"), IsError: tc.Status == "failed"})
		delete(c.seen, tc.ToolCallID)
	}
}

// announceLocked emits a ToolCall the first time a call shows up: as a tool_call update, or only in a permission
// request (a call that needs permission is announced by the request, not by a tool_call update).
func (c *LiveConv) announceLocked(tc toolCall) {
	c.flushLocked()
	if tc.ToolCallID == "" || c.seen[tc.ToolCallID] {
		return
	}
	c.seen[tc.ToolCallID] = true
	c.Emit(live.ToolCall{ID: tc.ToolCallID, Name: tc.Kind, Input: describe(tc)})
}

// flushLocked emits the message text gathered from chunks so far.
func (c *LiveConv) flushLocked() {
	if c.text.Len() > 0 {
		c.Emit(live.Text{Text: c.text.String()})
		c.text.Reset()
	}
}

// describe is a tool call's title and the paths it touches: ACP carries no raw arguments.
func describe(tc toolCall) string {
	parts := []string{tc.Title}
	for _, l := range tc.Locations {
		if l.Path != "" && l.Path != tc.Title {
			parts = append(parts, l.Path)
		}
	}
	return strings.Join(parts, "\n")
}

// cancelled is the answer to a permission request that ace cancels.
var cancelled = map[string]any{"outcome": map[string]any{"outcome": "cancelled"}}

type option struct {
	OptionID string `json:"optionId"`
	Name     string `json:"name"`
	Kind     string `json:"kind"` // allow_once, allow_always, reject_once, reject_always
}

// permission is session/request_permission as a Permission: allow picks the allow_once option, deny the
// reject_once option; without such an option the request is cancelled (gemini then cancels the tool call).
// answered runs when it is answered.
func permission(m live.Incoming, tc toolCall, opts []option, once *live.Once, answered func()) live.Permission {
	pick := func(kinds ...string) string {
		for _, k := range kinds {
			for _, o := range opts {
				if o.Kind == k {
					return o.OptionID
				}
			}
		}
		return ""
	}
	reply := func(id string) error {
		return once.Answer(func() error {
			answered()
			if id == "" {
				return m.Reply(cancelled)
			}
			return m.Reply(map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": id}})
		})
	}
	return live.NewPermission(tc.ToolCallID, tc.Kind, tc.Title, describe(tc), func(_ context.Context, allow bool, _ string) error {
		if allow {
			return reply(pick("allow_once")) // never more than the human allowed: not "for this session"
		}
		return reply(pick("reject_once", "reject_always"))
	})
}
