package fakeagent

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

// LiveMain is `demo-agent live --script FILE [--record FILE] [--state FILE] [claude's flags…]`: a stand-in for
// claude in its stream-json protocol mode (`claude -p --input-format stream-json …`, the live runner's). One
// process holds the conversation (--session-id ID, or --resume ID): it answers the initialize and interrupt
// control requests, and runs each user message as a turn of the script, from where the last turn stopped (kept
// in --state, as the headless agent keeps it: a conversation resumed by a new process goes on), printing
// claude's stream events and a result. Each message is appended to --record like a headless turn.
func LiveMain(args []string) int {
	h := newHeadlessAgent(args)
	h.format = "claude"
	if slices.Contains(args, "--version") {
		fmt.Fprintln(os.Stderr, "demo-agent live: no version")
		return 2
	}
	if h.session == "" {
		h.session = newSessionID()
	}
	script, err := h.loadScript()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	msgs := make(chan liveMessage)
	go readLive(os.Stdin, msgs)
	for {
		select {
		case <-sigs:
			return 143
		case m, ok := <-msgs:
			if !ok {
				return 0 // stdin closed: the host is done with the conversation
			}
			if code, exit := h.liveMessage(m, script, sigs); exit {
				return code
			}
		}
	}
}

// liveMessage is one line the host wrote: a user message or a control request.
type liveMessage struct {
	Type      string `json:"type"`
	RequestID string `json:"request_id"`
	Request   struct {
		Subtype string `json:"subtype"`
	} `json:"request"`
	Message struct {
		Content json.RawMessage `json:"content"`
	} `json:"message"`
}

func readLive(r io.Reader, msgs chan<- liveMessage) {
	defer close(msgs)
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		b, err := br.ReadBytes('\n')
		var m liveMessage
		if len(strings.TrimSpace(string(b))) > 0 && json.Unmarshal(b, &m) == nil {
			msgs <- m
		}
		if err != nil {
			return
		}
	}
}

// liveMessage answers a control request, or runs a user message as a turn; exit says the process ends (a
// scripted crash, a signal mid-turn).
func (h *headlessAgent) liveMessage(m liveMessage, script []action, sigs chan os.Signal) (code int, exit bool) {
	switch m.Type {
	case "control_request":
		// initialize proves the protocol; interrupt finds no turn running (turns run to their end here).
		h.emit(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success",
			"request_id": m.RequestID, "response": map[string]any{}}})
		return 0, false
	case "user":
	default:
		return 0, false
	}
	h.prompt = liveText(m.Message.Content)
	h.started, h.outTokens = time.Now(), 0
	h.recordTurn()
	return h.turn(script, sigs)
}

// liveText is a user message's text: a string, or its text blocks joined.
func liveText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type, Text string
	}
	_ = json.Unmarshal(raw, &blocks)
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}
