package egress

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// maxResponseHead bounds the proxy's answer to a CONNECT: it is a status line and a few headers.
const maxResponseHead = 8 << 10

// Tunnel asks the proxy at the other end of c for a tunnel to addr (host:port) and returns once it is open:
// what is then written to c goes to addr. The box's forwarder opens one for each connection to a forwarded
// loopback port, so that the proxy allows and records it like any other. A refusal is an error naming the
// status the proxy gave.
func Tunnel(c net.Conn, addr string) error {
	c.SetDeadline(time.Now().Add(dialTimeout + headerTimeout))
	defer c.SetDeadline(time.Time{})
	if _, err := fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %[1]s\r\n\r\n", addr); err != nil {
		return fmt.Errorf("egress: tunnel to %s: %w", addr, err)
	}
	// Byte by byte up to the blank line: a buffered read could take the first bytes of the tunnel with it.
	var head []byte
	b := make([]byte, 1)
	for !bytes.HasSuffix(head, []byte("\r\n\r\n")) {
		if len(head) > maxResponseHead {
			return fmt.Errorf("egress: tunnel to %s: the proxy's answer is too long", addr)
		}
		if _, err := io.ReadFull(c, b); err != nil {
			return fmt.Errorf("egress: tunnel to %s: %w", addr, err)
		}
		head = append(head, b[0])
	}
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(head)), nil)
	if err != nil {
		return fmt.Errorf("egress: tunnel to %s: %w", addr, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		// The answer's body says why (the proxy's own words, a line): what a probe shows people.
		reason := make([]byte, min(max(resp.ContentLength, 0), maxResponseHead))
		n, _ := io.ReadFull(c, reason)
		return fmt.Errorf("egress: tunnel to %s: %w", addr, &RefusedError{Status: resp.StatusCode,
			Reason: strings.TrimSpace(strings.TrimPrefix(string(reason[:n]), "ace egress: "))})
	}
	return nil
}

// RefusedError is a proxy's answer other than 200 to a CONNECT, and why, where it said.
type RefusedError struct {
	Status int
	Reason string
}

func (e *RefusedError) Error() string {
	msg := fmt.Sprintf("the proxy answered %d %s", e.Status, http.StatusText(e.Status))
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// Is makes a 403 match ErrRefused.
func (e *RefusedError) Is(target error) bool {
	return e.Status == http.StatusForbidden && errors.Is(target, ErrRefused)
}
