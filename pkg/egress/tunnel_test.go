package egress_test

import (
	"errors"
	"io"
	"net"
	"testing"

	"github.com/aceworks/ace/pkg/egress"
)

// TestTunnel: a CONNECT from the box's side opens a tunnel the proxy allows (bytes the destination sends first
// are not lost) and reports a refusal as ErrRefused.
func TestTunnel(t *testing.T) {
	banner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer banner.Close()
	go func() {
		for {
			c, err := banner.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, "220 hello\r\n") // a server that speaks first
			c.Close()
		}
	}()
	pu, events := proxy(t, banner.Addr().String())
	c, err := net.Dial("tcp", pu.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := egress.Tunnel(c, banner.Addr().String()); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(c)
	if err != nil || string(b) != "220 hello\r\n" {
		t.Fatalf("through the tunnel: %q %v", b, err)
	}
	c.Close() // the tunnel is reported once both directions ended
	if e := next(t, events); !e.Allowed || e.Method != "CONNECT" {
		t.Fatalf("event %+v", e)
	}
	c2, err := net.Dial("tcp", pu.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if err := egress.Tunnel(c2, "evil.test:443"); !errors.Is(err, egress.ErrRefused) {
		t.Fatalf("tunnel off the list: %v, want ErrRefused", err)
	}
	if e := next(t, events); e.Allowed || e.Host != "evil.test" {
		t.Fatalf("event %+v", e)
	}
}
