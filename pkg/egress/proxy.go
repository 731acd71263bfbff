// Package egress is the one way out of a box: an HTTP proxy (CONNECT tunnels and plain absolute-URI requests)
// that lets a connection out only when its host is on the run's allow list, refuses everything else with 403,
// and reports every connection — host, port, bytes each way, allowed or refused, duration — so that the run's
// events record what the agent reached. It listens on a unix socket that the box sees bind-mounted (a host TCP
// port is unreachable from a box's own network namespace).
//
// It is ~250 lines of stdlib rather than a proxy library: the libraries centre on TLS interception and
// handler chains, while this needs per-connection byte counts and a shutdown that leaves no goroutine behind.
package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Errors an Event carries.
var (
	ErrRefused   = errors.New("not on the allow list")
	ErrMalformed = errors.New("not a proxy request")
)

const (
	headerTimeout = 30 * time.Second
	dialTimeout   = 30 * time.Second
)

// Options configure a Proxy.
type Options struct {
	// Allow lists the host patterns a connection may go to (see ParseAllow); empty refuses everything.
	Allow []string
	// Report receives every connection once it has ended, from that connection's goroutine; nil drops them.
	Report func(Event)
	// Dial reaches a destination; nil is a net.Dialer. Tests and an upstream proxy replace it.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Proxy serves proxy requests on listeners; one Proxy may serve several.
type Proxy struct {
	allow  Allow
	report func(Event)
	dial   func(ctx context.Context, network, addr string) (net.Conn, error)
	// up and down count every byte relayed so far, as it goes: a connection still open counts too.
	up, down atomic.Int64
}

// Traffic returns the bytes relayed to (up) and from (down) every destination so far, connections still open
// included: a model streaming its answer one byte a second moves down every second, long before its connection
// ends and is reported.
func (p *Proxy) Traffic() (up, down int64) { return p.up.Load(), p.down.Load() }

// New checks o's allow list and returns the proxy.
func New(o Options) (*Proxy, error) {
	allow, err := ParseAllow(o.Allow)
	if err != nil {
		return nil, fmt.Errorf("egress: %w", err)
	}
	p := &Proxy{allow: allow, report: o.Report, dial: o.Dial}
	if p.report == nil {
		p.report = func(Event) {}
	}
	if p.dial == nil {
		d := &net.Dialer{Timeout: dialTimeout}
		p.dial = d.DialContext
	}
	return p, nil
}

// Serve answers connections on ln until ctx ends, then closes ln and every open connection and returns once
// their goroutines have ended. It returns nil after ctx ended, or the error that stopped Accept.
func (p *Proxy) Serve(ctx context.Context, ln net.Listener) error {
	return ServeConns(ctx, ln, p.serveConn)
}

// ServeConns hands each connection accepted on ln to serve, in a goroutine of its own, until ctx ends; then it
// closes ln and returns once every serve has returned (serve must end when its context does). It returns nil
// after ctx ended, or the error that stopped Accept.
func ServeConns(ctx context.Context, ln net.Listener, serve func(context.Context, net.Conn)) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	context.AfterFunc(ctx, func() { ln.Close() })
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("accept on %s: %w", ln.Addr(), err)
		}
		wg.Go(func() { serve(ctx, c) })
	}
}

// serveConn reads one request from c and answers it: a tunnel for CONNECT, one forwarded exchange otherwise.
func (p *Proxy) serveConn(ctx context.Context, c net.Conn) {
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	ev := Event{Start: time.Now()}
	quiet := false
	defer func() {
		if !quiet {
			ev.Duration = time.Since(ev.Start)
			p.report(ev)
		}
	}()
	c.SetReadDeadline(ev.Start.Add(headerTimeout))
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if errors.Is(err, io.EOF) {
		quiet = true // connected and left without a word: nothing was asked, nothing to record
		return
	}
	if err != nil {
		ev.Status, ev.Err = http.StatusBadRequest, fmt.Errorf("%w: %w", ErrMalformed, err)
		reply(c, ev.Status, "ace egress: malformed request\n")
		return
	}
	c.SetReadDeadline(time.Time{})
	ev.Method = req.Method
	if ev.Host, ev.Port, err = target(req); err != nil {
		ev.Status, ev.Err = http.StatusBadRequest, err
		reply(c, ev.Status, "ace egress: "+err.Error()+"\n")
		return
	}
	if !p.allow.Allows(ev.Host, ev.Port) {
		ev.Status, ev.Err = http.StatusForbidden, ErrRefused
		reply(c, ev.Status, "ace egress: "+ev.Addr()+" is not on this run's allow list\n")
		return
	}
	ev.Allowed = true
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	up, err := p.dial(dctx, "tcp", ev.Addr())
	cancel()
	if err != nil {
		ev.Status, ev.Err = http.StatusBadGateway, err
		reply(c, ev.Status, "ace egress: cannot reach "+ev.Addr()+"\n")
		return
	}
	defer up.Close()
	stopUp := context.AfterFunc(ctx, func() { up.Close() })
	defer stopUp()
	cc := &countingConn{Conn: up, totalUp: &p.up, totalDown: &p.down}
	defer func() { ev.Up, ev.Down = cc.up.Load(), cc.down.Load() }()
	if req.Method == http.MethodConnect {
		ev.Status = http.StatusOK
		if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			ev.Err = err
			return
		}
		// br may already hold the first bytes of the tunnel (a client need not wait for the 200).
		relay(c, br, cc)
		return
	}
	ev.Status, ev.Err = forward(c, req, cc)
}

// forward sends one plain-HTTP request to up and its response back to c, then ends the exchange: one request
// per connection keeps every request on the allow list's watch.
func forward(c net.Conn, req *http.Request, up net.Conn) (int, error) {
	for _, h := range []string{"Proxy-Connection", "Proxy-Authorization", "Connection", "Keep-Alive"} {
		req.Header.Del(h)
	}
	req.Close = true
	if err := req.Write(up); err != nil {
		reply(c, http.StatusBadGateway, "ace egress: send the request: "+err.Error()+"\n")
		return http.StatusBadGateway, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(up), req)
	if err != nil {
		reply(c, http.StatusBadGateway, "ace egress: read the response: "+err.Error()+"\n")
		return http.StatusBadGateway, err
	}
	defer resp.Body.Close()
	resp.Close = true
	return resp.StatusCode, resp.Write(c)
}

// target is the destination of a proxy request: CONNECT's authority, or an absolute http:// URL.
func target(req *http.Request) (string, int, error) {
	var host, port string
	switch {
	case req.Method == http.MethodConnect:
		h, p, err := net.SplitHostPort(req.Host)
		if err != nil {
			h, p = req.Host, "443"
		}
		host, port = h, p
	case req.URL.IsAbs() && req.URL.Scheme == "http":
		host, port = req.URL.Hostname(), req.URL.Port()
		if port == "" {
			port = "80"
		}
	default:
		return "", 0, fmt.Errorf("%w: send CONNECT host:port or an absolute http:// URL", ErrMalformed)
	}
	host = canonical(host)
	n, err := strconv.Atoi(port)
	if err != nil || n <= 0 || n > 65535 || !validHost(host) {
		return "", 0, fmt.Errorf("%w: bad destination %q", ErrMalformed, net.JoinHostPort(host, port))
	}
	return host, n, nil
}

func reply(w io.Writer, status int, msg string) {
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\n"+
		"Connection: close\r\n\r\n%s", status, http.StatusText(status), len(msg), msg)
}
