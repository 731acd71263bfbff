package livehost

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/aceworks/ace/pkg/live"
)

// maxRequest bounds a request line: a user message may be long (a review's findings), not unbounded.
const maxRequest = 16 << 20

// listen opens the control socket at path, 0600 in a directory made 0700. A socket left by a host that died is
// replaced; one a live host answers on is not: two hosts on one run would run two CLIs on one conversation.
func listen(path string) (net.Listener, error) {
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		_ = c.Close()
		return nil, fmt.Errorf("livehost: another live host listens on %s", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("livehost: remove the stale socket: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("livehost: socket directory: %w", err)
	}
	// The socket is born 0600 rather than chmod-ed after: nobody else may connect in between. The mask is the
	// process's, and no other goroutine creates files yet (the CLI, which inherits it, starts after).
	old := syscall.Umask(0o177)
	ln, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("livehost: listen: %w", err)
	}
	return ln, nil
}

// serve answers requests on ln until it is closed.
func (h *host) serve(ctx context.Context, ln net.Listener) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		go h.handle(ctx, conn)
	}
}

// handle answers the one request of conn.
func (h *host) handle(ctx context.Context, conn net.Conn) {
	defer conn.Close()
	br := bufio.NewReaderSize(conn, 64<<10)
	line, err := br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		line, err = readLong(br, line)
	}
	var req wireRequest
	if err == nil {
		err = json.Unmarshal(line, &req)
	}
	var r wireReply
	if err != nil {
		r.Error = "livehost: bad request: " + err.Error()
	} else {
		r = h.do(ctx, req)
	}
	b, _ := json.Marshal(r)
	if _, err := conn.Write(append(b, '\n')); err != nil {
		slog.DebugContext(ctx, "live host: reply not delivered", "op", req.Op, "err", err)
	}
}

// readLong reads the rest of a line longer than the reader's buffer, up to maxRequest.
func readLong(br *bufio.Reader, first []byte) ([]byte, error) {
	line := append([]byte(nil), first...)
	for len(line) <= maxRequest {
		more, err := br.ReadSlice('\n')
		line = append(line, more...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
	return nil, fmt.Errorf("request over %d bytes", maxRequest)
}

func (h *host) do(ctx context.Context, req wireRequest) wireReply {
	var err error
	switch req.Op {
	case "status":
		s := h.status()
		return wireReply{Status: &s}
	case "send":
		err = h.send(ctx, req.Text, FromAce)
	case "allow":
		err = h.allow(ctx, req.ID, req.Allow, FromAce, "")
	case "answer":
		err = h.answer(ctx, req.ID, req.Text, FromAce)
	case "interrupt":
		err = h.interrupt(ctx)
	default:
		err = fmt.Errorf("livehost: unknown request %q", req.Op)
	}
	var r wireReply
	if err != nil {
		r.Error = err.Error()
	}
	switch {
	case errors.Is(err, ErrNotPending):
		r.Code = codeNotPending
	case errors.Is(err, live.ErrHandshake):
		r.Code = codeHandshake
	}
	return r
}
