// Package modelserver is a scripted model server for tests: it speaks the Anthropic Messages, OpenAI Responses and
// Gemini APIs the way the real agent CLIs (claude, codex, gemini) call them, plays a Scenario of model turns, and
// logs every request so a test can assert what the model was told.
package modelserver

import (
	"fmt"
	"time"
)

// Kind is what a scripted model turn does.
type Kind string

// The turn kinds a Scenario can play.
const (
	KindText  Kind = "text"
	KindWrite Kind = "write_file"
	KindEdit  Kind = "edit_file"
	KindShell Kind = "shell"
	KindRead  Kind = "read_file"
	KindAsk   Kind = "ask_user"
	// KindHang never answers: the request is held open, not a byte sent, until the server closes (a model or a
	// gateway that hangs).
	KindHang Kind = "hang"
)

// Turn is one model turn: a text answer or one tool call, emitted in the calling CLI's own tool shape.
type Turn struct {
	Kind    Kind
	Text    string   // KindText; KindAsk: the question
	Path    string   // KindWrite, KindEdit, KindRead: absolute, or relative to Scenario.Dir
	Content string   // KindWrite
	Old     string   // KindEdit
	New     string   // KindEdit
	Command string   // KindShell
	Options []string // KindAsk
	// Say is text the model writes before its tool call, in the same message (Anthropic only: a text block
	// before the tool_use block; claude records each block as a line of its own in its session file).
	Say string
	// DripEvery and DripBytes make the answer slow (Anthropic only): its first DripBytes bytes go one every
	// DripEvery, the rest at once — a model answering one byte a second, for as long as a test can wait.
	DripEvery time.Duration
	DripBytes int
}

// Dripping is t answered slowly: its first n bytes one every every (see Turn.DripEvery).
func (t Turn) Dripping(every time.Duration, n int) Turn {
	t.DripEvery, t.DripBytes = every, n
	return t
}

// Hang is a turn that is never answered (see KindHang).
func Hang() Turn { return Turn{Kind: KindHang} }

// Saying is t with text said before its tool call (see Turn.Say).
func (t Turn) Saying(text string) Turn {
	t.Say = text
	return t
}

// Text answers with text and no tool call.
func Text(s string) Turn { return Turn{Kind: KindText, Text: s} }

// WriteFile writes content to path (the whole file).
func WriteFile(path, content string) Turn { return Turn{Kind: KindWrite, Path: path, Content: content} }

// EditFile replaces old with new in path.
func EditFile(path, old, new string) Turn {
	return Turn{Kind: KindEdit, Path: path, Old: old, New: new}
}

// Shell runs a shell command.
func Shell(command string) Turn { return Turn{Kind: KindShell, Command: command} }

// ReadFile reads path.
func ReadFile(path string) Turn { return Turn{Kind: KindRead, Path: path} }

// Ask asks the user a question with options: claude's AskUserQuestion tool, or a plain text question with
// numbered options where the CLI declares no such tool.
func Ask(question string, options ...string) Turn {
	return Turn{Kind: KindAsk, Text: question, Options: options}
}

// Scenario is the script the server plays. The turn a request gets is chosen by the number of model turns
// already in its history, so a retried request or a side request (a session title, a router) never advances it.
type Scenario struct {
	Turns []Turn
	// Final is the text answered after the last turn ("Done." when empty).
	Final string
	// Dir resolves relative turn paths (claude and gemini tools want absolute ones).
	Dir string
	// SideText answers side requests: requests that declare no tools ("OK." when empty).
	SideText string
	// Gateway makes the server a gateway such as users put between a CLI and the model: it passes the
	// conversation's requests and not the CLI's side requests to its vendor — claude's auto-mode classifier is
	// refused (403), token counting is not there (404). The CLIs' telemetry and update checks go to hosts of
	// their own, which the check's namespace never reaches either way.
	Gateway bool
}

func (sc Scenario) final() string {
	if sc.Final == "" {
		return "Done."
	}
	return sc.Final
}

func (sc Scenario) sideText() string {
	if sc.SideText == "" {
		return "OK."
	}
	return sc.SideText
}

// turn returns the turn to play after done model turns, and false when the script is over.
func (sc Scenario) turn(done int) (Turn, bool) {
	if done < 0 || done >= len(sc.Turns) {
		return Turn{Kind: KindText, Text: sc.final()}, false
	}
	return sc.Turns[done], true
}

// questionText renders an ask turn as plain text, for CLIs without a question tool.
func (t Turn) questionText() string {
	s := t.Text
	for i, o := range t.Options {
		s += fmt.Sprintf("\n%d. %s", i+1, o)
	}
	return s
}
