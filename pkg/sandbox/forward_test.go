package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/testkit"
	"github.com/aceworks/ace/pkg/egress"
	"github.com/aceworks/ace/pkg/sandbox"
)

// TestForward: a port of the host's loopback that the box forwards is reached at the same port of the box's own
// loopback (a local model server the CLI is pointed at, 127.0.0.1:PORT), through the proxy, which allows and
// records it; a forwarded port the allow list does not name is refused and recorded.
func TestForward(t *testing.T) {
	h := host(t)
	d := dirs(t, "wc", "home", "egress")
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "local-model") }))
	defer model.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "not-allowed") }))
	defer other.Close()
	modelPort, otherPort := model.Listener.Addr().(*net.TCPAddr).Port, other.Listener.Addr().(*net.TCPAddr).Port
	events := make(chan egress.Event, 8)
	sock := filepath.Join(d[2], "egress.sock")
	defer serveProxyReport(t, sock, func(e egress.Event) { events <- e }, model.Listener.Addr().String())()
	box, err := h.Wrap(sandbox.Spec{WorkDir: d[0], Home: d[1], Self: self(t), ProxySocket: sock, Forward: []int{modelPort, otherPort}},
		[]string{sandbox.SelfPath, "fetch", "direct"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := box.Command(ctx)
	cmd.Stdin = strings.NewReader(model.URL + "/v1/messages\n" + other.URL + "/\n")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != "200 local-model\nerror" {
		t.Fatalf("boxed fetches of the forwarded ports:\n%s\nwant the allowed one answered and the other cut", got)
	}
	// A tunnel is reported once it ends, a refusal at once: either may come first.
	got := map[int]egress.Event{}
	for len(got) < 2 {
		select {
		case e := <-events:
			got[e.Port] = e
		case <-ctx.Done():
			t.Fatalf("the proxy recorded %d connections, want 2", len(got))
		}
	}
	if e := got[modelPort]; !e.Allowed || e.Host != "127.0.0.1" || e.Method != "CONNECT" || e.Status != 200 {
		t.Errorf("the allowed forward: %+v", e)
	}
	if e := got[otherPort]; e.Allowed || !errors.Is(e.Err, egress.ErrRefused) {
		t.Errorf("the refused forward: %+v", e)
	}
}

// TestForwardStreamsWhole: a model's streamed answers reach the box whole through the forwarded port and the
// proxy, request after request on one kept-alive connection, each asked with a conversation-sized body, beside
// busy loops — gemini 0.61 sat "Thinking..." after its model had answered, and the way between them was suspect.
func TestForwardStreamsWhole(t *testing.T) {
	h := host(t)
	d := dirs(t, "wc", "home", "egress")
	const size, n = 70 << 10, 200
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if b, _ := io.ReadAll(r.Body); len(b) != size {
			http.Error(w, fmt.Sprintf("%d B of the body", len(b)), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s", r.URL.Path) // one event, flushed, then the end of the stream
		w.(http.Flusher).Flush()
	}))
	defer model.Close()
	sock := filepath.Join(d[2], "egress.sock")
	defer serveProxy(t, sock, model.Listener.Addr().String())()
	box, err := h.Wrap(sandbox.Spec{WorkDir: d[0], Home: d[1], Self: self(t), ProxySocket: sock,
		Forward: []int{model.Listener.Addr().(*net.TCPAddr).Port}}, []string{sandbox.SelfPath, "fetch", "post", strconv.Itoa(size)})
	if err != nil {
		t.Fatal(err)
	}
	testkit.LoadCPU(t, runtime.NumCPU())
	var in, want strings.Builder
	for i := range n {
		fmt.Fprintf(&in, "%s/answer-%d\n", model.URL, i)
		fmt.Fprintf(&want, "200 data: /answer-%d\n", i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := box.Command(ctx)
	cmd.Stdin = strings.NewReader(in.String())
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != want.String() {
		t.Fatalf("the boxed client's answers differ from the model's:\n%s", out)
	}
}

// TestForwardNeedsProxy: forwarding is done by the proxy, so a box without one cannot have it.
func TestForwardNeedsProxy(t *testing.T) {
	h := host(t)
	d := dirs(t, "wc", "home", "egress")
	if _, err := h.Wrap(sandbox.Spec{WorkDir: d[0], Home: d[1], Forward: []int{11434}}, []string{"true"}); err == nil {
		t.Fatal("a forwarded port without a proxy was accepted")
	}
	sock := filepath.Join(d[2], "egress.sock")
	defer serveProxy(t, sock)()
	if _, err := h.Wrap(sandbox.Spec{WorkDir: d[0], Home: d[1], ProxySocket: sock, Forward: []int{sandbox.DefaultProxyPort}}, []string{"true"}); err == nil {
		t.Fatalf("forwarding the proxy's own port %d was accepted", sandbox.DefaultProxyPort)
	}
}

// TestProbeReach: ace doctor's probe connects from a box as its agent would: a forwarded loopback port whose
// server answers is reached; a forwarded one whose server is down is not, with the proxy's reason; a loopback
// port the box does not forward is said to be so; a destination off the allow list is refused (403).
func TestProbeReach(t *testing.T) {
	h := host(t)
	d := dirs(t, "wc", "home", "egress")
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	down, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	downAddr := down.Addr().String()
	down.Close()
	upPort, downPort := up.Addr().(*net.TCPAddr).Port, down.Addr().(*net.TCPAddr).Port
	sock := filepath.Join(d[2], "egress.sock")
	defer serveProxy(t, sock, up.Addr().String(), downAddr)()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := h.ProbeReach(ctx, sandbox.Spec{WorkDir: d[0], Home: d[1], Self: self(t), ProxySocket: sock,
		Forward: []int{upPort, downPort}}, []string{up.Addr().String(), downAddr, "127.0.0.1:9", "refused.example:443"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]sandbox.Reach{}
	for _, r := range res {
		got[r.Dest] = r
	}
	if r := got[up.Addr().String()]; !r.OK || !r.Forwarded || r.Status != 200 {
		t.Errorf("the forwarded server: %+v", r)
	}
	if r := got[downAddr]; r.OK || !r.Forwarded || r.Status != 502 || !strings.Contains(r.Error, "connection refused") {
		t.Errorf("the forwarded port nothing listens on: %+v", r)
	}
	if r := got["127.0.0.1:9"]; r.OK || r.Forwarded || !strings.Contains(r.Error, "not forwarded into the box") {
		t.Errorf("the port not forwarded: %+v", r)
	}
	if r := got["refused.example:443"]; r.OK || r.Status != 403 {
		t.Errorf("the destination off the allow list: %+v", r)
	}
}
