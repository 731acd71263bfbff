package livehost

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/aceworks/ace/pkg/live"
	"github.com/aceworks/ace/pkg/usage"
)

// Status is what the host tells ace about its conversation.
type Status struct {
	SessionID string `json:"session_id"`
	Busy      bool   `json:"busy"` // a turn is running (or one the CLI queued is about to)
	// Pending are the permission and question records not answered yet, oldest first. One the agent withdrew
	// goes (a withdrawn record says so), and a turn that ends drops its own: an interrupted turn's requests can no
	// longer be answered.
	Pending []Record `json:"pending"`
	Turns   int      `json:"turns"` // turns ended so far in this host
	LastSeq int64    `json:"last_seq"`
}

// ErrNotPending is the error (wrapped) of answering a permission or question that is not pending: answered
// already (by the human in the pane, say), dropped with its turn, or never asked.
var ErrNotPending = errors.New("livehost: no such pending request")

// errNotStarted is the error of a request that needs the conversation when the CLI did not start.
var errNotStarted = errors.New("livehost: the agent did not start")

// host holds one conversation and what the runner and the human see of it.
type host struct {
	j           *journal
	midTurn     live.MidTurn
	autoApprove bool

	ready    chan struct{}     // closed once the conversation started, or failed to
	conv     live.Conversation // set before ready closes; nil when the start failed
	startErr error

	mu      sync.Mutex
	session string // the session ID recorded
	busy    bool
	queued  int // messages sent during the running turn that a CLI queueing them has not started yet
	turns   int
	pending []*request
	ids     int
}

// request is a permission or question waiting for its answer; a question of several asks collects their
// answers one by one.
type request struct {
	rec     Record
	perm    live.Permission
	q       live.Question
	answers []string
}

func newHost(j *journal, a agent, autoApprove bool) *host {
	return &host{j: j, midTurn: a.midTurn, autoApprove: autoApprove, ready: make(chan struct{})}
}

// started hands the host its conversation, or why there is none; requests waiting for it go on.
func (h *host) started(conv live.Conversation, err error) {
	h.conv, h.startErr = conv, err
	close(h.ready)
	if conv != nil {
		h.noteSession()
	}
}

// wait returns the conversation once it has started.
func (h *host) wait(ctx context.Context) (live.Conversation, error) {
	select {
	case <-h.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if h.conv == nil {
		return nil, fmt.Errorf("%w: %w", errNotStarted, h.startErr)
	}
	return h.conv, nil
}

// noteSession records the session as soon as the conversation has an ID.
func (h *host) noteSession() {
	id := h.conv.SessionID()
	h.mu.Lock()
	known := h.session != "" || id == ""
	if !known {
		h.session = id
	}
	h.mu.Unlock()
	if !known {
		h.j.add(Record{Kind: KindSession, SessionID: id})
	}
}

// send delivers text as a user message from from.
func (h *host) send(ctx context.Context, text, from string) error {
	conv, err := h.wait(ctx)
	if err != nil {
		return err
	}
	h.j.add(Record{Kind: KindUser, Text: text, From: from})
	h.mu.Lock()
	wasBusy := h.busy
	if wasBusy {
		h.queued++
	}
	h.busy = true
	h.mu.Unlock()
	if err := conv.Send(ctx, text); err != nil {
		h.mu.Lock()
		if wasBusy {
			h.queued = max(h.queued-1, 0)
		} else {
			h.busy = false
		}
		h.mu.Unlock()
		h.j.add(Record{Kind: KindError, Text: "the message was not delivered: " + err.Error()})
		return fmt.Errorf("livehost: send: %w", err)
	}
	return nil
}

// interrupt stops the running turn, if any.
func (h *host) interrupt(ctx context.Context) error {
	conv, err := h.wait(ctx)
	if err != nil {
		return err
	}
	if err := conv.Interrupt(ctx); err != nil {
		return fmt.Errorf("livehost: interrupt: %w", err)
	}
	return nil
}

// status is the conversation as ace sees it.
func (h *host) status() Status {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := Status{SessionID: h.session, Busy: h.busy, Turns: h.turns, LastSeq: h.j.last(), Pending: []Record{}}
	for _, r := range h.pending {
		s.Pending = append(s.Pending, r.rec)
	}
	return s
}

// claim takes the pending request id of kind out of the list: one answer wins, whichever side gives it first.
func (h *host) claim(id, kind string) (*request, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	i := slices.IndexFunc(h.pending, func(r *request) bool { return r.rec.ID == id && r.rec.Kind == kind })
	if i < 0 {
		return nil, fmt.Errorf("%s %q: %w", kind, id, ErrNotPending)
	}
	r := h.pending[i]
	h.pending = slices.Delete(h.pending, i, i+1)
	return r, nil
}

// oldest is the pending request a line typed in the pane answers.
func (h *host) oldest() *request {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.pending) == 0 {
		return nil
	}
	return h.pending[0]
}

// allow answers permission id.
func (h *host) allow(ctx context.Context, id string, allow bool, from, reason string) error {
	r, err := h.claim(id, KindPermission)
	if err != nil {
		return err
	}
	if allow {
		err = r.perm.Allow(ctx)
	} else {
		err = r.perm.Deny(ctx, reason)
	}
	if err != nil {
		h.j.add(Record{Kind: KindError, ID: id, Text: "the answer did not reach the agent: " + err.Error()})
		return fmt.Errorf("livehost: answer permission %s: %w", id, err)
	}
	h.j.add(Record{Kind: KindAnswered, ID: id, From: from, Allow: &allow})
	return nil
}

// answer answers question id with text (see Client.Answer). A question of several asks takes one answer per
// line, or the next ask's answer alone: it stays pending until every ask has one.
func (h *host) answer(ctx context.Context, id, text, from string) error {
	r, err := h.claim(id, KindQuestion)
	if err != nil {
		return err
	}
	asks := r.q.Asks
	left := asks[len(r.answers):]
	if lines := splitLines(text); len(left) > 1 && len(lines) == len(left) {
		for i, l := range lines {
			r.answers = append(r.answers, pick(left[i], l).text)
		}
	} else {
		r.answers = append(r.answers, pick(left[0], text).text)
	}
	if len(r.answers) < len(asks) {
		h.mu.Lock()
		h.pending = append([]*request{r}, h.pending...)
		h.mu.Unlock()
		h.j.say(askText(asks[len(r.answers)], len(r.answers)+1, len(asks)))
		return nil
	}
	if c := pick(asks[0], text); len(asks) == 1 && c.option >= 0 {
		err = r.q.AnswerOption(ctx, c.option)
	} else {
		err = r.q.Answer(ctx, r.answers...)
	}
	if err != nil {
		h.j.add(Record{Kind: KindError, ID: id, Text: "the answer did not reach the agent: " + err.Error()})
		return fmt.Errorf("livehost: answer question %s: %w", id, err)
	}
	h.j.add(Record{Kind: KindAnswered, ID: id, From: from, Text: joinLines(r.answers)})
	return nil
}

// run records the conversation's events until the CLI exits (true) or ctx ends (false).
func (h *host) run(ctx context.Context) (exited bool) {
	events := h.conv.Events()
	for {
		select {
		case <-ctx.Done():
			return false
		case e, ok := <-events:
			if !ok {
				return true
			}
			if h.event(ctx, e) {
				return true
			}
			h.noteSession()
		}
	}
}

// event records one event; true for the CLI's exit.
func (h *host) event(ctx context.Context, e live.Event) bool {
	switch e := e.(type) {
	case live.Text:
		h.j.add(Record{Kind: KindText, Text: e.Text})
	case live.ToolCall:
		h.j.add(Record{Kind: KindToolCall, ID: e.ID, Tool: e.Name, Input: e.Input})
	case live.ToolResult:
		h.j.add(Record{Kind: KindToolResult, ID: e.ID, Text: e.Output, IsError: e.IsError})
	case live.Permission:
		h.permission(ctx, e)
	case live.Question:
		h.question(e)
	case live.Withdrawn:
		h.withdrawn(e.ID)
	case live.TurnDone:
		h.turnDone(e)
	case live.Limit:
		h.j.add(Record{Kind: KindLimit, Text: e.Message, ResetsAt: e.ResetsAt})
	case live.Error:
		if e.Retrying {
			h.j.add(Record{Kind: KindRetry, Text: e.Message, Attempt: e.Attempt, Max: e.Max})
			break
		}
		h.j.add(Record{Kind: KindError, Text: e.Message})
	case live.Exit:
		h.j.add(Record{Kind: KindExit, Code: exitCode(e.Err), Text: stderrTail(e.Stderr)})
		return true
	}
	return false
}

func (h *host) permission(ctx context.Context, p live.Permission) {
	r := h.ask(&request{perm: p, rec: Record{Kind: KindPermission, ID: h.idOr(p.ID), Tool: p.Tool, Input: p.Input,
		Text: p.Title}})
	if h.autoApprove {
		_ = h.allow(ctx, r.rec.ID, true, FromAutoApprove, "")
		return
	}
	h.j.say("  type y to allow it, n to deny it (n and a reason tells the agent why)")
}

func (h *host) question(q live.Question) {
	if len(q.Asks) == 0 {
		return // nothing to ask: the adapters never send one
	}
	r := &request{q: q, rec: Record{Kind: KindQuestion, ID: h.idOr(q.ID), Options: q.Asks[0].Options}}
	var texts []string
	for _, a := range q.Asks {
		texts = append(texts, a.Text)
	}
	r.rec.Text = joinLines(texts)
	h.ask(r)
	if len(q.Asks) > 1 {
		h.j.say(fmt.Sprintf("  %d questions: answer them one at a time, starting with the first", len(q.Asks)))
	}
	h.j.say("  type an option's number or its words, or an answer of your own")
}

// withdrawn drops request id, which the agent no longer waits on, and records so (also when its turn's end
// dropped it already): a runner that relayed it to a human stops waiting for the answer.
func (h *host) withdrawn(id string) {
	if id == "" {
		return // the adapters give every request an ID
	}
	h.mu.Lock()
	h.pending = slices.DeleteFunc(h.pending, func(r *request) bool { return r.rec.ID == id })
	h.mu.Unlock()
	h.j.add(Record{Kind: KindWithdrawn, ID: id})
}

// ask records r and makes it pending in one step: whoever reads its record can answer it.
func (h *host) ask(r *request) *request {
	h.mu.Lock()
	defer h.mu.Unlock()
	r.rec = h.j.add(r.rec)
	h.pending = append(h.pending, r)
	return r
}

func (h *host) turnDone(d live.TurnDone) {
	// The record first, then not busy: whoever sees the host idle finds the turn's end in the transcript.
	u := d.Usage
	h.j.add(Record{Kind: KindTurnDone, Status: d.Stop, Text: d.Err, Model: d.Model, Usage: &usage.Usage{InputTokens: u.InputTokens,
		OutputTokens: u.OutputTokens, CacheReadTokens: u.CachedTokens, CacheWriteTokens: u.CacheWriteTokens}})
	h.mu.Lock()
	defer h.mu.Unlock()
	h.turns++
	h.pending = nil
	switch {
	case h.midTurn == live.OneTurn:
		h.busy, h.queued = h.queued > 0, 0
	default:
		h.busy = h.queued > 0
		h.queued = max(h.queued-1, 0)
	}
}

// idOr is id, or one of the host's when the CLI gave none: an answer must name its request.
func (h *host) idOr(id string) string {
	if id != "" {
		return id
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ids++
	return fmt.Sprintf("ace-%d", h.ids)
}

// stderrTail is what a human needs of the stderr of a CLI that exited: its last 4 KiB, from a line's start.
func stderrTail(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 4<<10 {
		s = s[len(s)-4<<10:]
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
	}
	return s
}

// exitCode is how a process ended, as a shell says it: its status, or 128+N for signal N; -1 when unknown.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return -1
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ee.ExitCode()
}
