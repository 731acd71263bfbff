// Package live holds one long-lived agent CLI process per conversation and talks to it over the CLI's own
// structured protocol: Claude Code's stream-json control protocol, Codex's app-server and Gemini CLI's Agent
// Client Protocol (one adapter package each). Unlike the tmux runner it reads no screen, and unlike the exec
// runner the process outlives a turn, so a tool permission or a question comes back to ace mid-turn and a human's
// answer goes back in the same turn.
//
// This package holds what the adapters share: the Conversation they implement, the events they emit, the Frame
// each is built on (the process, its handshake, the events' stream, the gate that holds a message sent while a
// turn runs, the CLI's open requests) and newline-delimited JSON-RPC 2.0 (codex and gemini speak it; claude has its own framing). An
// adapter supplies only what is its CLI's (CLI): its flags, its reader of the CLI's output, its handshake and
// how it starts a turn.
package live

import (
	"context"
	"errors"
	"time"
)

// ErrHandshake marks a Start that ran the CLI but whose protocol handshake failed: this CLI (version,
// configuration) cannot run live, and a runner falls back to another way of driving it.
var ErrHandshake = errors.New("live: protocol handshake failed")

// Options start a conversation.
type Options struct {
	// Argv is the CLI and the user's own flags (model, approval policy, …); the adapter appends the flags that
	// select its protocol mode (claude -p --input-format stream-json …, codex app-server, gemini --acp).
	Argv []string
	// Env is the process's whole environment (nil: none, not ace's).
	Env []string
	// Dir is the working directory of the agent.
	Dir string
	// Resume is a SessionID from an earlier conversation to continue instead of starting a new one.
	Resume string
	// Grace is how long ending the process waits for it to leave after its stdin closes, and again after
	// SIGTERM; 0 is DefaultGrace.
	Grace time.Duration
}

// Conversation is one CLI process holding one conversation across turns.
type Conversation interface {
	// Send delivers text as a user message, byte-exact at the model. When the agent is idle it starts a turn.
	// While a turn runs the message is held, and starts the next turn when this one ends (claude and codex: with
	// every other message sent meanwhile; gemini: each its own turn), because the CLIs fold a message into a
	// running turn in words of their own, or drop the running turn for it (Frame's gate; see each adapter).
	Send(ctx context.Context, text string) error
	// Events are what the agent does, in order; the channel is closed after an Exit event or Close.
	Events() <-chan Event
	// SessionID names the conversation for Options.Resume (claude's session, codex's thread, gemini's session).
	SessionID() string
	// Interrupt stops the running turn, if any; the process and the conversation go on.
	Interrupt(ctx context.Context) error
	// PID is the CLI process's ID, which leads its process group (for supervision and CPU accounting).
	PID() int
	// Close ends the process (stdin closed, then signals to its process group) and returns how it ended; events
	// not yet received are dropped.
	Close() error
}

// Event is one of the event types below.
type Event interface{ event() }

// Text is an assistant message (streamed chunks joined).
type Text struct{ Text string }

// ToolCall is the agent starting a tool. Input is its arguments as compact JSON, or the command for a shell.
type ToolCall struct{ ID, Name, Input string }

// ToolResult is what a tool returned (the ToolCall with the same ID).
type ToolResult struct {
	ID, Output string
	IsError    bool
}

// Permission is the CLI asking whether a tool may run. The turn waits until Allow or Deny is called once, or the
// request is Withdrawn.
type Permission struct {
	ID    string // the tool call's ID
	Tool  string // the tool: claude's tool name, codex "shell" or "file_change", gemini's tool kind
	Title string // what the CLI says the call does (a description, a reason, a title), possibly empty
	Input string // the tool's arguments as compact JSON, or the command
	reply func(ctx context.Context, allow bool, reason string) error
}

// NewPermission is a Permission whose answer goes to reply (for adapters).
func NewPermission(id, tool, title, input string, reply func(ctx context.Context, allow bool, reason string) error) Permission {
	return Permission{ID: id, Tool: tool, Title: title, Input: input, reply: reply}
}

// Allow lets the tool run once.
func (p Permission) Allow(ctx context.Context) error { return p.answer(ctx, true, "") }

// Deny refuses the tool; reason is shown to the model where the protocol carries one.
func (p Permission) Deny(ctx context.Context, reason string) error {
	return p.answer(ctx, false, reason)
}

func (p Permission) answer(ctx context.Context, allow bool, reason string) error {
	if p.reply == nil {
		return errors.New("live: this permission request cannot be answered")
	}
	return p.reply(ctx, allow, reason)
}

// Ask is one question of a Question.
type Ask struct {
	Header, Text string
	Options      []string
	Multi        bool // several options may be chosen (answer them comma-separated)
}

// Question is the agent asking the human (claude's AskUserQuestion, codex's request_user_input). The turn waits
// until it is answered once, or the request is Withdrawn.
type Question struct {
	ID    string
	Asks  []Ask
	reply func(ctx context.Context, answers []string) error
}

// NewQuestion is a Question whose answers go to reply (for adapters).
func NewQuestion(id string, asks []Ask, reply func(ctx context.Context, answers []string) error) Question {
	return Question{ID: id, Asks: asks, reply: reply}
}

// Answer answers each Ask in order, with an option's text or free text.
func (q Question) Answer(ctx context.Context, answers ...string) error {
	if q.reply == nil {
		return errors.New("live: this question cannot be answered")
	}
	if len(answers) != len(q.Asks) {
		return errors.New("live: one answer per question is needed")
	}
	return q.reply(ctx, answers)
}

// AnswerOption answers a one-question Question with its option i (0-based).
func (q Question) AnswerOption(ctx context.Context, i int) error {
	if len(q.Asks) != 1 || i < 0 || i >= len(q.Asks[0].Options) {
		return errors.New("live: no such option")
	}
	return q.Answer(ctx, q.Asks[0].Options[i])
}

// Usage is what a turn spent, as the CLI reports it.
type Usage struct {
	// InputTokens are input tokens read afresh; gemini's protocol does not split off the cached part, so there
	// they are every input token and CachedTokens is 0.
	InputTokens, OutputTokens int64
	// CachedTokens are input tokens read from the prompt cache, CacheWriteTokens written to it (claude only).
	CachedTokens, CacheWriteTokens int64
}

// Prompt is every input token of the turn.
func (u Usage) Prompt() int64 { return u.InputTokens + u.CachedTokens + u.CacheWriteTokens }

// How a turn ended (TurnDone.Stop).
const (
	Completed   = "completed"
	Interrupted = "interrupted" // by Interrupt
	Failed      = "failed"      // Err says why
)

// TurnDone ends a turn: Send may start the next.
type TurnDone struct {
	Usage Usage
	// Stop is Completed, Interrupted or Failed; Reason the CLI's own word for it (claude's stop_reason or
	// result subtype, codex's turn status, gemini's stopReason).
	Stop, Reason string
	// Result is the turn's final text where the protocol repeats it (claude).
	Result string
	// Err is the error that failed the turn, empty unless Stop is Failed.
	Err string
	// Model is the model that answered, where the protocol names it (codex); "" where it does not. What a
	// turn cost is priced by it.
	Model string
}

// Limit is the account hitting a usage or rate limit the CLI does not wait out itself; the turn ends with it.
type Limit struct {
	Message  string
	ResetsAt time.Time // zero when the protocol does not say
}

// Error is an error the CLI reported that does not end the conversation; Retrying when it tries again itself
// (its model's API: its Attempt, of Max, when it says).
type Error struct {
	Message      string
	Retrying     bool
	Attempt, Max int
}

// Exit is the CLI process ending; it is the last event.
type Exit struct {
	Err    error  // nil for exit status 0
	Stderr string // the end of what it wrote to stderr
}

func (Text) event()       {}
func (ToolCall) event()   {}
func (ToolResult) event() {}
func (Permission) event() {}
func (Question) event()   {}
func (TurnDone) event()   {}
func (Limit) event()      {}
func (Error) event()      {}
func (Exit) event()       {}

// MidTurn is how a CLI takes the messages sent while a turn runs (see each adapter's startTurn): the live host's
// Busy follows it.
type MidTurn int

// The ways a CLI takes a message sent mid-turn.
const (
	OneTurn  MidTurn = iota // claude, codex: every message queued meanwhile starts one next turn, together
	TurnEach                // gemini: each queued message is a turn of its own, one after another
)

// Starter is an adapter's start as the interface: a failed start returns a nil Conversation (not a nil *Conv in
// a non-nil interface).
func Starter[C Conversation](start func(context.Context, Options) (C, error)) func(context.Context, Options) (Conversation, error) {
	return func(ctx context.Context, opts Options) (Conversation, error) {
		c, err := start(ctx, opts)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
}

// Started is an adapter's StartLive's result: c, whose Frame's Start returned err; nil when that failed.
func Started[C Conversation](c C, err error) (C, error) {
	if err != nil {
		var none C
		return none, err
	}
	return c, nil
}
