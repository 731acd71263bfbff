package sandbox_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/egress"
	"github.com/aceworks/ace/pkg/sandbox"
)

// fetchMain GETs each URL read from stdin through the box's proxy (with "direct", straight to it: a forwarded
// port) and prints "status body" or "error".
func fetchMain(args []string) int {
	client := proxyClient("")
	get := client.Get
	switch {
	case len(args) > 0 && args[0] == "direct":
		client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		get = client.Get
	case len(args) > 1 && args[0] == "post":
		// As a CLI asks its model: a body the size of a conversation, one kept-alive connection for every request.
		client = &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{}}
		size, _ := strconv.Atoi(args[1])
		get = func(u string) (*http.Response, error) {
			return client.Post(u, "application/json", strings.NewReader(strings.Repeat("x", size)))
		}
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		resp, err := get(in.Text())
		if err != nil {
			fmt.Println("error")
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(resp.StatusCode, string(b))
	}
	return 0
}

// serveProxy runs an egress proxy on sock until the returned stop is called.
func serveProxy(t *testing.T, sock string, allow ...string) (stop func()) {
	t.Helper()
	return serveProxyReport(t, sock, nil, allow...)
}

// serveProxyReport is serveProxy reporting each connection to report.
func serveProxyReport(t *testing.T, sock string, report func(egress.Event), allow ...string) (stop func()) {
	t.Helper()
	ln, err := egress.ListenUnix(sock)
	if err != nil {
		t.Fatal(err)
	}
	p, err := egress.New(egress.Options{Allow: allow, Report: report})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, ln) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// TestProxyRestart: a box that outlives its proxy (ace restarted) reaches the proxy ace starts anew at the same
// path, since the box sees the socket's directory, not the socket file it started with.
func TestProxyRestart(t *testing.T) {
	h := host(t)
	d := dirs(t, "wc", "home", "egress")
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "model-ok") }))
	defer model.Close()
	sock := filepath.Join(d[2], "egress.sock")
	stop := serveProxy(t, sock, model.Listener.Addr().String())
	box, err := h.Wrap(sandbox.Spec{WorkDir: d[0], Home: d[1], Self: self(t), ProxySocket: sock}, []string{sandbox.SelfPath, "fetch"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := box.Command(ctx)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(stdout)
	fetch := func() string {
		t.Helper()
		fmt.Fprintln(stdin, model.URL+"/v1")
		line, err := out.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(line)
	}
	if got := fetch(); got != "200 model-ok" {
		t.Fatalf("through the first proxy: %q", got)
	}
	stop()
	if got := fetch(); got != "error" {
		t.Fatalf("with no proxy: %q", got)
	}
	defer serveProxy(t, sock, model.Listener.Addr().String())()
	if got := fetch(); got != "200 model-ok" {
		t.Fatalf("through the proxy started anew: %q", got)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
}

func TestProxySocketAlone(t *testing.T) {
	h := host(t)
	d := dirs(t, "wc", "home", "run")
	sock := filepath.Join(d[2], "egress.sock")
	defer serveProxy(t, sock)()
	if err := os.WriteFile(filepath.Join(d[2], "env-123"), []byte(`{"TOKEN":"x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Wrap(sandbox.Spec{WorkDir: d[0], Home: d[1], ProxySocket: sock}, []string{"true"}); err == nil {
		t.Fatal("a proxy socket beside other files was accepted: the box would see them")
	}
}
