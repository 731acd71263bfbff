package egress

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
)

// Relay copies a to b and b to a until both directions have ended. The box's forwarder uses it between the
// agent's TCP connection and the proxy's unix socket.
func Relay(a, b net.Conn) { relay(a, a, b) }

// relay copies ar (a's reader, possibly buffered) to b and b to a. A direction that ends cleanly closes only the
// write side of its destination, so that a peer still sending can finish (half-close); one that fails closes
// both connections, so that the other direction cannot wait forever.
func relay(a net.Conn, ar io.Reader, b net.Conn) {
	var wg sync.WaitGroup
	wg.Go(func() { pipe(b, ar, a) })
	pipe(a, b, b)
	wg.Wait()
}

func pipe(dst net.Conn, src io.Reader, srcConn net.Conn) {
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		srcConn.Close()
		return
	}
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	} else {
		dst.Close()
	}
}

// countingConn counts the bytes written to (up) and read from (down) a destination, and adds them to the
// proxy's totals as they go.
type countingConn struct {
	net.Conn
	up, down           atomic.Int64
	totalUp, totalDown *atomic.Int64
}

func (c *countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.up.Add(int64(n))
	c.totalUp.Add(int64(n))
	return n, err
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.down.Add(int64(n))
	c.totalDown.Add(int64(n))
	return n, err
}

// CloseWrite half-closes the destination when it can be, so that relay's half-close passes through the count.
func (c *countingConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}

// ListenUnix listens on a unix socket at path, readable and writable by this user only (the box runs as the
// same user). A socket left there by a process that died is replaced; any other file is an error.
func ListenUnix(path string) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != os.ModeSocket {
			return nil, fmt.Errorf("egress: %s exists and is not a socket", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("egress: remove stale socket: %w", err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("egress: %w", err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("egress: listen: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("egress: %w", err)
	}
	return ln, nil
}
