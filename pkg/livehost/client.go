package livehost

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/aceworks/ace/pkg/live"
)

// ErrNotRunning is wrapped by a Client's error when no host listens on its socket.
var ErrNotRunning = errors.New("livehost: no live host is running")

// The socket protocol: one connection per call, one JSON request line, one JSON reply line.
type wireRequest struct {
	Op    string `json:"op"` // send, allow, answer, interrupt, status
	ID    string `json:"id,omitempty"`
	Text  string `json:"text,omitempty"`
	Allow bool   `json:"allow,omitempty"`
}

type wireReply struct {
	Error string `json:"error,omitempty"`
	// Code names an error the caller may act on: not_pending (ErrNotPending), not_started (live.ErrHandshake
	// when the handshake failed).
	Code   string  `json:"code,omitempty"`
	Status *Status `json:"status,omitempty"`
}

// Error codes of wireReply.
const (
	codeNotPending = "not_pending"
	codeHandshake  = "handshake"
)

// Client talks to the host on one socket.
type Client struct{ socket string }

// Dial returns a client of the host listening on socket. It connects lazily: each call connects, sends one
// request and reads its reply.
func Dial(socket string) *Client { return &Client{socket: socket} }

// Send sends text to the agent as a user message (live.Conversation.Send), recorded as from "ace".
func (c *Client) Send(ctx context.Context, text string) error {
	_, err := c.call(ctx, wireRequest{Op: "send", Text: text})
	return err
}

// Allow answers the pending permission id; an error wraps ErrNotPending when it is not pending.
func (c *Client) Allow(ctx context.Context, id string, allow bool) error {
	_, err := c.call(ctx, wireRequest{Op: "allow", ID: id, Allow: allow})
	return err
}

// Answer answers the pending question id: an option's number ("2") or its words pick that option
// (AnswerOption), anything else is free text (Answer). A question of several asks takes one answer per line.
func (c *Client) Answer(ctx context.Context, id, text string) error {
	_, err := c.call(ctx, wireRequest{Op: "answer", ID: id, Text: text})
	return err
}

// Interrupt stops the running turn, if any.
func (c *Client) Interrupt(ctx context.Context) error {
	_, err := c.call(ctx, wireRequest{Op: "interrupt"})
	return err
}

// Status is the host's view of its conversation.
func (c *Client) Status(ctx context.Context) (Status, error) {
	r, err := c.call(ctx, wireRequest{Op: "status"})
	if err != nil {
		return Status{}, err
	}
	if r.Status == nil {
		return Status{}, errors.New("livehost: status: the host sent none")
	}
	return *r.Status, nil
}

func (c *Client) call(ctx context.Context, req wireRequest) (wireReply, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.socket)
	if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
		return wireReply{}, fmt.Errorf("%s: %w", c.socket, ErrNotRunning)
	}
	if err != nil {
		return wireReply{}, fmt.Errorf("livehost: %w", err)
	}
	defer conn.Close()
	// The host may wait (for the CLI's handshake, for the CLI to take a message): ctx bounds it.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	b, _ := json.Marshal(req)
	var r wireReply
	if _, err = conn.Write(append(b, '\n')); err == nil {
		var line []byte
		if line, err = bufio.NewReader(conn).ReadBytes('\n'); err == nil {
			err = json.Unmarshal(line, &r)
		}
	}
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil {
		return wireReply{}, fmt.Errorf("livehost: %s: %w", req.Op, err)
	}
	switch {
	case r.Code == codeNotPending:
		return r, &hostError{r.Error, ErrNotPending}
	case r.Code == codeHandshake:
		return r, &hostError{r.Error, live.ErrHandshake}
	case r.Error != "":
		return r, &hostError{r.Error, nil}
	}
	return r, nil
}

// hostError is an error the host replied with: its message as the host wrote it (which names the sentinel
// already), and the sentinel for errors.Is.
type hostError struct {
	msg  string
	kind error
}

func (e *hostError) Error() string { return e.msg }
func (e *hostError) Unwrap() error { return e.kind }
