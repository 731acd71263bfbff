// Package headless runs coding-agent CLIs without a terminal and turns their JSON event streams into typed events.
package headless

import (
	"encoding/json"

	"github.com/aceworks/ace/pkg/usage"
)

// Kind tells what an Event describes; it decides which Event fields are set.
type Kind string

// Event kinds. The comment after each lists the Event fields it sets.
const (
	KindInit       Kind = "init"        // SessionID, Model
	KindUser       Kind = "user"        // Text (a user message echoed by the CLI)
	KindAssistant  Kind = "assistant"   // Text: one whole assistant message (deltas accumulated)
	KindToolCall   Kind = "tool_call"   // Tool, ToolID, Input (compact JSON or the shell command)
	KindToolResult Kind = "tool_result" // ToolID, Output (truncated to 4 KiB), IsError
	KindResult     Kind = "result"      // Status ("success"/"error"...), Text (final result text), Usage, IsError
	KindError      Kind = "error"       // Text
	KindLimit      Kind = "limit"       // Text, ResetsAt (0: not said): the account hit a usage or rate limit
	KindRetry      Kind = "retry"       // Text (the error), Attempt, MaxAttempts (0: not said): the CLI retries its model's API
	KindRaw        Kind = "raw"         // Raw: a line that is not JSON or of an unknown type; never fatal
)

// Usage is the token and time accounting an agent reports at the end of a run or turn: what it spent, in the
// one count ace keeps of that (usage.Usage: its CostUSD is the cost the CLI itself reported, claude's
// total_cost_usd, 0 when it reports none), and the model, turns and time of the stream.
type Usage struct {
	usage.Usage
	// Model is the model the usage was spent on, when the stream says.
	Model      string
	Turns      int
	DurationMS int64
}

// usageJSON is Usage as status files and `ace logs --json` have always written it: cache reads as
// cached_tokens, every field left out when zero.
type usageJSON struct {
	InputTokens      int64   `json:"input_tokens,omitempty"`
	OutputTokens     int64   `json:"output_tokens,omitempty"`
	CachedTokens     int64   `json:"cached_tokens,omitempty"`
	CacheWriteTokens int64   `json:"cache_write_tokens,omitempty"`
	CostUSD          float64 `json:"cost_usd,omitempty"`
	Model            string  `json:"model,omitempty"`
	Turns            int     `json:"turns,omitempty"`
	DurationMS       int64   `json:"duration_ms,omitempty"`
}

// MarshalJSON writes u as usageJSON.
func (u Usage) MarshalJSON() ([]byte, error) {
	return json.Marshal(usageJSON{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CachedTokens: u.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens, CostUSD: u.CostUSD, Model: u.Model, Turns: u.Turns, DurationMS: u.DurationMS})
}

// UnmarshalJSON reads u from usageJSON.
func (u *Usage) UnmarshalJSON(b []byte) error {
	var w usageJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*u = Usage{Usage: usage.Usage{InputTokens: w.InputTokens, OutputTokens: w.OutputTokens, CacheReadTokens: w.CachedTokens,
		CacheWriteTokens: w.CacheWriteTokens, CostUSD: w.CostUSD}, Model: w.Model, Turns: w.Turns, DurationMS: w.DurationMS}
	return nil
}

// add sums u2 into u; used to total a transcript's result events.
func (u *Usage) add(u2 *Usage) {
	if u2 == nil {
		return
	}
	u.Usage.Add(u2.Usage)
	if u2.Model != "" {
		u.Model = u2.Model
	}
	u.Turns += u2.Turns
	u.DurationMS += u2.DurationMS
}

// Event is one typed step of an agent run, the same shape for every CLI.
type Event struct {
	Kind      Kind   `json:"kind"`
	SessionID string `json:"session_id,omitempty"`
	Model     string `json:"model,omitempty"`
	Text      string `json:"text,omitempty"`
	Tool      string `json:"tool,omitempty"`
	ToolID    string `json:"tool_id,omitempty"`
	Input     string `json:"input,omitempty"`
	Output    string `json:"output,omitempty"`
	IsError   bool   `json:"is_error,omitempty"`
	Status    string `json:"status,omitempty"`
	Usage     *Usage `json:"usage,omitempty"`
	Raw       string `json:"raw,omitempty"`
	// ResetsAt is when a limit resets, in Unix seconds (KindLimit).
	ResetsAt int64 `json:"resets_at,omitempty"`
	// Attempt is the CLI's attempt at its model's API, of MaxAttempts (KindRetry).
	Attempt     int `json:"attempt,omitempty"`
	MaxAttempts int `json:"max_attempts,omitempty"`
}

// StderrParser is a Parser that also reads the agent's stderr, line by line, for what its stream does not say
// (gemini reports its API retries there only); the supervisor asks a parser that has it.
type StderrParser interface {
	ParseStderr(line []byte) []Event
}

// Parser turns one agent's stream, line by line, into events. It is stateful: delta messages are accumulated
// and emitted as one KindAssistant event when the message ends (next non-delta event) or at Flush.
type Parser interface {
	Parse(line []byte) []Event // never fails: bad or unknown lines come back as KindRaw
	Flush() []Event            // end of stream: emit whatever is still accumulated
}

// Transcript summarises a whole stream (used by `ace logs`).
type Transcript struct {
	Events    []Event
	Raw       int    // lines kept raw
	SessionID string // the first session id seen
	Usage     Usage  // summed over result events
}

func (t *Transcript) add(evs []Event) {
	for _, e := range evs {
		t.Events = append(t.Events, e)
		if e.Kind == KindRaw {
			t.Raw++
		}
		if t.SessionID == "" && e.SessionID != "" {
			t.SessionID = e.SessionID
		}
		if e.Kind == KindResult {
			t.Usage.add(e.Usage)
		}
	}
}
