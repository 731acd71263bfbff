package live

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
)

// Conn is JSON-RPC 2.0 with one message per line, both ways, as codex app-server and the Agent Client Protocol
// frame it on stdio. Either side sends requests: the CLI asks for approvals while a call of ours is pending, so
// Serve hands the CLI's requests and notifications to a handler and matches responses to calls itself.
type Conn struct {
	write func([]byte) error

	mu      sync.Mutex
	next    int64
	pending map[string]chan response
	done    bool
	err     error // why the connection ended
}

// NewConn is a Conn writing lines with write (Proc.WriteLine).
func NewConn(write func(line []byte) error) *Conn {
	return &Conn{write: write, pending: map[string]chan response{}}
}

// RPCError is an error response.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("json-rpc error %d: %s", e.Code, e.Message) }

// ErrClosed is returned by calls pending or made after the connection ended.
var ErrClosed = errors.New("live: connection closed")

// Incoming is a request or notification from the other side.
type Incoming struct {
	Method string
	Params json.RawMessage
	ID     json.RawMessage // nil for a notification
	conn   *Conn
}

// Reply answers a request with result.
func (m Incoming) Reply(result any) error {
	if m.ID == nil {
		return nil
	}
	return m.conn.send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": result})
}

// ReplyError answers a request with an error.
func (m Incoming) ReplyError(code int, message string) error {
	if m.ID == nil {
		return nil
	}
	return m.conn.send(map[string]any{"jsonrpc": "2.0", "id": m.ID,
		"error": map[string]any{"code": code, "message": message}})
}

// MethodNotFound is JSON-RPC's code for a method the receiver does not implement.
const MethodNotFound = -32601

type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *RPCError       `json:"error"`
}

type response struct {
	result json.RawMessage
	err    error
}

// Serve reads messages from r until it ends, answers calls, and passes requests and notifications to handle,
// in order, on this goroutine: handle must not wait for a call's response. It returns why reading stopped
// (nil at EOF); pending and later calls then fail with ErrClosed. A line that is not JSON-RPC goes to bad.
func (c *Conn) Serve(r io.Reader, handle func(Incoming), bad func(line []byte)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var err error
	for {
		var line []byte
		line, err = br.ReadBytes('\n')
		if t := bytes.TrimSpace(line); len(t) > 0 {
			c.dispatch(t, handle, bad)
		}
		if err != nil {
			break
		}
	}
	if errors.Is(err, io.EOF) {
		err = nil
	}
	c.mu.Lock()
	c.done = true
	c.err = err
	for id, ch := range c.pending {
		ch <- response{err: ErrClosed}
		delete(c.pending, id)
	}
	c.mu.Unlock()
	return err
}

func (c *Conn) dispatch(line []byte, handle func(Incoming), bad func([]byte)) {
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		if bad != nil {
			bad(line)
		}
		return
	}
	if m.Method != "" {
		handle(Incoming{Method: m.Method, Params: m.Params, ID: nullToNil(m.ID), conn: c})
		return
	}
	key := idKey(m.ID)
	c.mu.Lock()
	ch, ok := c.pending[key]
	delete(c.pending, key)
	c.mu.Unlock()
	if !ok {
		if bad != nil {
			bad(line)
		}
		return
	}
	if m.Error != nil {
		ch <- response{err: m.Error}
		return
	}
	ch <- response{result: m.Result}
}

// Call sends a request and waits for its response, decoding its result into result (unless nil).
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	c.mu.Lock()
	if c.done {
		c.mu.Unlock()
		return fmt.Errorf("%s: %w", method, ErrClosed)
	}
	c.next++
	id := c.next
	ch := make(chan response, 1)
	c.pending[strconv.FormatInt(id, 10)] = ch
	c.mu.Unlock()
	if err := c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		c.forget(id)
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case r := <-ch:
		if r.err != nil {
			return fmt.Errorf("%s: %w", method, r.err)
		}
		if result != nil {
			if err := json.Unmarshal(r.result, result); err != nil {
				return fmt.Errorf("%s: decode the result: %w", method, err)
			}
		}
		return nil
	case <-ctx.Done():
		c.forget(id)
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// Notify sends a notification.
func (c *Conn) Notify(method string, params any) error {
	m := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		m["params"] = params
	}
	if err := c.send(m); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	return nil
}

func (c *Conn) forget(id int64) {
	c.mu.Lock()
	delete(c.pending, strconv.FormatInt(id, 10))
	c.mu.Unlock()
}

func (c *Conn) send(m map[string]any) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("live: encode: %w", err)
	}
	return c.write(b)
}

// idKey makes the map key of an id: our ids are integers; a string id that the other side echoes back differs
// from them in its quotes.
func idKey(id json.RawMessage) string { return string(bytes.TrimSpace(id)) }

func nullToNil(id json.RawMessage) json.RawMessage {
	if t := bytes.TrimSpace(id); len(t) == 0 || string(t) == "null" {
		return nil
	}
	return id
}
