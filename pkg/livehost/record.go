package livehost

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/aceworks/ace/pkg/untrusted"
	"github.com/aceworks/ace/pkg/usage"
)

// Record kinds.
const (
	KindSession         = "session"          // SessionID: the conversation has one (once per host)
	KindUser            = "user"             // Text, From: a user message sent to the agent
	KindText            = "text"             // Text: an assistant message
	KindToolCall        = "tool_call"        // ID, Tool, Input
	KindToolResult      = "tool_result"      // ID, Text (at most MaxToolOutput bytes), IsError
	KindPermission      = "permission"       // ID, Tool, Input, Text (what the CLI says the call does)
	KindQuestion        = "question"         // ID, Text, Options
	KindAnswered        = "answered"         // ID, From, Allow (a permission) or Text (a question's answers)
	KindWithdrawn       = "withdrawn"        // ID: the agent no longer waits for that permission's or question's answer
	KindTurnDone        = "turn_done"        // Status, Usage, Text (why it failed)
	KindLimit           = "limit"            // Text, ResetsAt
	KindError           = "error"            // Text
	KindExit            = "exit"             // Code, Text (the end of the CLI's stderr, or why it ended or did not start)
	KindHandshakeFailed = "handshake_failed" // Text: why
)

// Where a user message or an answer came from (Record.From).
const (
	FromAce         = "ace"          // over the socket
	FromTerminal    = "terminal"     // typed in the pane
	FromAutoApprove = "auto_approve" // Spec.AutoApprove
)

// Record is one line of the transcript.
type Record struct {
	Seq       int64        `json:"seq"` // 1, 2, 3 … continuing after the file's last seq when the host restarts
	Time      time.Time    `json:"time"`
	Kind      string       `json:"kind"`
	Text      string       `json:"text,omitempty"`
	From      string       `json:"from,omitempty"`
	ID        string       `json:"id,omitempty"`
	Tool      string       `json:"tool,omitempty"`
	Input     string       `json:"input,omitempty"`
	Options   []string     `json:"options,omitempty"` // question: the options of its (first) ask, in order
	Allow     *bool        `json:"allow,omitempty"`
	Status    string       `json:"status,omitempty"` // turn_done: "completed", "interrupted" or "failed"
	Usage     *usage.Usage `json:"usage,omitempty"`
	Model     string       `json:"model,omitempty"` // turn_done: the model that answered, where the protocol says
	ResetsAt  time.Time    `json:"resets_at,omitzero"`
	SessionID string       `json:"session_id,omitempty"`
	Code      int          `json:"code,omitempty"`
	IsError   bool         `json:"is_error,omitempty"` // tool_result: the tool failed
}

// Bounds of a transcript read back: a host's directory is written by the boxed agent as much as by the host
// (both run in the box), so the file is the agent's. A record is small (tool output is cut at MaxToolOutput); a
// line past recordMax is not one the host wrote.
const (
	TranscriptMax = 256 << 20
	recordMax     = 16 << 20
)

// ReadTranscript returns the records of the transcript at path with Seq > after, in order. A missing file holds
// none; a last line without its newline is one being written (or torn by a crash) and is left out. The file is
// read beneath its directory (which must be ace's: the host's directory, whose content the box writes) through
// package untrusted: a link out of it, a file that is not regular or one over TranscriptMax is an
// untrusted.Refusal, never a wait; only the records after after are kept.
func ReadTranscript(path string, after int64) ([]Record, error) {
	f, err := untrusted.New(filepath.Dir(path)).Open(filepath.Base(path), TranscriptMax)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read live transcript: %w", err)
	}
	defer f.Close()
	var out []Record
	n := 0
	err = f.Lines(recordMax, func(line []byte) error {
		n++
		if !bytes.HasSuffix(line, []byte("\n")) || len(bytes.TrimSpace(line)) == 0 {
			return nil
		}
		var r Record
		if err := json.Unmarshal(line, &r); err != nil {
			return fmt.Errorf("live transcript %s line %d: %w", path, n, err)
		}
		if r.Seq > after {
			out = append(out, r)
		}
		return nil
	})
	return out, err
}
