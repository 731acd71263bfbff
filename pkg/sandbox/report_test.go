package sandbox_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/aceworks/ace/pkg/sandbox"
)

// TestReportsOnlyFromTheBox: ace takes a report only from a box's first process; this test process, on the host,
// is refused (TestHostileAgent has the agent inside a box refused).
func TestReportsOnlyFromTheBox(t *testing.T) {
	sock := filepath.Join(t.TempDir(), sandbox.ReportSocketName)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan sandbox.Report, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sandbox.ServeReports(ctx, ln, func(r sandbox.Report) { got <- r }) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	body := `{"attempts":[{"kind":"write","op":"openat","write":true,"path":"/forged","n":1}]}`
	fmt.Fprintf(c, "POST /ace/box/report HTTP/1.1\r\nHost: ace\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a host process's report: %s, want 403", resp.Status)
	}
	select {
	case r := <-got:
		t.Errorf("the report was taken: %+v", r)
	default:
	}
}
