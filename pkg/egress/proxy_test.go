package egress_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/egress"
)

// proxy starts a proxy on a loopback TCP port with the given allow list; events arrive on the channel.
func proxy(t *testing.T, allow ...string) (*url.URL, <-chan egress.Event) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	events := start(t, ln, allow)
	return &url.URL{Scheme: "http", Host: ln.Addr().String()}, events
}

func start(t *testing.T, ln net.Listener, allow []string) <-chan egress.Event {
	t.Helper()
	events := make(chan egress.Event, 16)
	p, err := egress.New(egress.Options{Allow: allow, Report: func(e egress.Event) { events <- e }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return events
}

func next(t *testing.T, events <-chan egress.Event) egress.Event {
	t.Helper()
	select {
	case e := <-events:
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
		return egress.Event{}
	}
}

func hostPort(t *testing.T, rawURL string) (string, int) {
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	return u.Hostname(), port
}

func TestConnectAllowed(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "model says hi")
	}))
	defer srv.Close()
	host, port := hostPort(t, srv.URL)
	pu, events := proxy(t, net.JoinHostPort(host, strconv.Itoa(port)))
	c := srv.Client()
	c.Transport.(*http.Transport).Proxy = http.ProxyURL(pu)
	resp, err := c.Get(srv.URL + "/v1/messages")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "model says hi" {
		t.Fatalf("body %q", body)
	}
	c.CloseIdleConnections() // ends the tunnel, which reports it
	e := next(t, events)
	if !e.Allowed || e.Method != "CONNECT" || e.Host != host || e.Port != port || e.Status != 200 || e.Err != nil {
		t.Fatalf("event %+v", e)
	}
	if e.Up == 0 || e.Down < int64(len(body)) || e.Duration <= 0 {
		t.Fatalf("counts %+v", e)
	}
}

func TestPlainHTTPAllowed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Proxy-Authorization") != "" {
			t.Error("proxy credentials reached the destination")
		}
		w.WriteHeader(http.StatusTeapot)
		io.WriteString(w, "plain "+r.URL.Path)
	}))
	defer srv.Close()
	host, port := hostPort(t, srv.URL)
	pu, events := proxy(t, net.JoinHostPort(host, strconv.Itoa(port)))
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
	resp, err := c.Get(srv.URL + "/pkg")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTeapot || string(body) != "plain /pkg" {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
	e := next(t, events)
	if !e.Allowed || e.Method != "GET" || e.Status != http.StatusTeapot || e.Down < int64(len(body)) || e.Up == 0 {
		t.Fatalf("event %+v", e)
	}
}

func TestRefused(t *testing.T) {
	pu, events := proxy(t, "allowed.test")
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
	// CONNECT: the client sees the proxy's 403 as an error.
	_, err := c.Get("https://evil.test/exfiltrate")
	if err == nil || !strings.Contains(err.Error(), "Forbidden") {
		t.Fatalf("CONNECT to a host off the list: %v", err)
	}
	if e := next(t, events); e.Allowed || e.Status != 403 || !errors.Is(e.Err, egress.ErrRefused) || e.Host != "evil.test" || e.Port != 443 {
		t.Fatalf("event %+v", e)
	}
	resp, err := c.Get("http://evil.test:8080/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("plain HTTP to a host off the list: %d", resp.StatusCode)
	}
	if e := next(t, events); e.Allowed || e.Status != 403 || e.Method != "GET" || e.Port != 8080 {
		t.Fatalf("event %+v", e)
	}
}

func TestMalformedAndUnreachable(t *testing.T) {
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()
	pu, events := proxy(t, deadAddr)
	// A request for the proxy itself (origin form) is not a proxy request.
	resp, err := http.Get(pu.String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("origin-form request: %d", resp.StatusCode)
	}
	if e := next(t, events); e.Status != 400 || !errors.Is(e.Err, egress.ErrMalformed) {
		t.Fatalf("event %+v", e)
	}
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
	resp, err = c.Get("http://" + deadAddr + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("allowed but nothing listening: %d", resp.StatusCode)
	}
	if e := next(t, events); !e.Allowed || e.Status != 502 || e.Err == nil {
		t.Fatalf("event %+v", e)
	}
}

// TestUnixSocket is how a box reaches the proxy: through a socket file, not a port.
func TestUnixSocket(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	sock := filepath.Join(t.TempDir(), "egress.sock")
	ln, err := egress.ListenUnix(sock)
	if err != nil {
		t.Fatal(err)
	}
	events := start(t, ln, []string{srv.Listener.Addr().String()})
	tr := &http.Transport{
		Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: "egress"}),
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
	}
	resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if e := next(t, events); !e.Allowed || e.Status != 200 {
		t.Fatalf("event %+v", e)
	}
}

// TestShutdown: cancelling Serve's context closes an open tunnel, reports it, and Serve returns only after.
func TestShutdown(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan egress.Event, 4)
	p, err := egress.New(egress.Options{Allow: []string{echo.Addr().String()}, Report: func(e egress.Event) { events <- e }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, ln) }()

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %[1]s\r\n\r\nping", echo.Addr())
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(br, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("echo through the tunnel: %q %v", buf, err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
	if e := next(t, events); !e.Allowed || e.Up != 4 || e.Down != 4 {
		t.Fatalf("event %+v", e)
	}
	if _, err := br.ReadByte(); err == nil {
		t.Fatal("the tunnel is still open after shutdown")
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Fatal("the listener is still open after shutdown")
	}
}

// TestTrafficWhileOpen: a destination answering one byte at a time moves the proxy's totals with each byte,
// while its connection is still open (nothing reported yet): a slow model is seen working.
func TestTrafficWhileOpen(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		for range 3 {
			io.WriteString(w, "x")
			w.(http.Flusher).Flush()
			select {
			case <-release:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
		<-release
	}))
	defer srv.Close()
	defer close(release) // before the server closes: it waits for the handler
	host, port := hostPort(t, srv.URL)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p, err := egress.New(egress.Options{Allow: []string{net.JoinHostPort(host, strconv.Itoa(port))}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, ln) }()
	defer func() { cancel(); <-done }()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", srv.Listener.Addr(), srv.Listener.Addr())
	br := bufio.NewReader(c)
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", srv.Listener.Addr())
	up, down := p.Traffic()
	for deadline := time.Now().Add(10 * time.Second); down < 100 && time.Now().Before(deadline); up, down = p.Traffic() {
		time.Sleep(10 * time.Millisecond)
	}
	if up == 0 || down == 0 {
		t.Fatalf("traffic while the answer comes: up %d, down %d", up, down)
	}
	before := down
	for deadline := time.Now().Add(10 * time.Second); down == before && time.Now().Before(deadline); _, down = p.Traffic() {
		time.Sleep(10 * time.Millisecond)
	}
	if down <= before {
		t.Fatalf("a byte more of the answer did not move the count (%d)", down)
	}
}
