package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/aceworks/ace/pkg/egress"
)

// The recorder's channel to ace: the box's first process (`ace __box`) reports what it saw as an HTTP request
// to a socket of its own next to the egress proxy's (Spec.ReportSocket, in the directory the box sees), which
// ServeReports answers on the host. It takes reports only from that process: PID 2 of a PID namespace one level
// below ace's — bwrap's reaper is 1 and the command it starts 2, which ace __box is for the box's whole life.
// Nothing else in the box can be that process, and the agent can neither read nor drive it: it is not dumpable
// (BoxMain), so the agent — the same user, without capabilities — cannot ptrace it or read its memory or
// descriptors. Its forwarder, which relays the agent's connections, dials only the proxy's socket, never this
// one. So the agent can neither forge a report nor read one, short of ending the box.

// ReportSocketName is the name of the report socket, next to the proxy's.
const ReportSocketName = "report.sock"

// reportPath is the request's path.
const reportPath = "/ace/box/report"

// maxReportBody bounds a report: a box names at most maxRecordedPaths paths.
const maxReportBody = 1 << 20

// Attempt is one path the box kept the agent from, and how many times it tried since the last report.
type Attempt struct {
	Kind AttemptKind `json:"kind"`
	// Op is the system call: openat, mkdirat, unlinkat, …
	Op string `json:"op"`
	// Write says that it would have written: opened for writing, created, removed, renamed.
	Write bool `json:"write,omitempty"`
	// Path is absolute, links resolved, as the box sees it: the host's path too (the box mounts paths where they
	// are); for a connection (Kind.Network), its destination, host:port.
	Path string `json:"path"`
	// Prog is the program that made a connection (its command name, as the kernel keeps it), for people to
	// know which: "ssh", "node".
	Prog  string `json:"prog,omitempty"`
	Count int    `json:"n"`
}

// Report is what a box's first process sends: the attempts since its last report.
type Report struct {
	Attempts []Attempt `json:"attempts,omitempty"`
	// More counts attempts at paths beyond the box's bound on the paths it names (maxRecordedPaths).
	More int `json:"more,omitempty"`
	// Unrecorded says why some or all of the box's file attempts go unrecorded: seccomp user notification is
	// unavailable (no attempt is recorded), or a process made itself unreadable to the recorder (its are not).
	Unrecorded string `json:"unrecorded,omitempty"`
}

// ServeReports answers the reports of boxes' first processes on ln (a unix socket at Spec.ReportSocket) until
// ctx ends, then closes ln and every open connection and returns once their goroutines have ended. Each report
// goes to report, from its connection's goroutine, without the reads of hidden paths, and of /proc entries, that
// do not exist on the host: the box withheld nothing there (a CLI looking for its settings in each parent
// directory of its working copy; a PID no process has here). Whether a PID was the box's own is the box's to say
// (boxHad): PIDs of the box's namespace and the host's are not the same numbers. A report from any other process
// is refused.
func ServeReports(ctx context.Context, ln net.Listener, report func(Report)) error {
	err := egress.ServeConns(ctx, ln, func(ctx context.Context, c net.Conn) {
		defer c.Close()
		stop := context.AfterFunc(ctx, func() { c.Close() })
		defer stop()
		c.SetDeadline(time.Now().Add(reportTimeout))
		status, msg := http.StatusNoContent, ""
		if err := receive(c, report); err != nil {
			status, msg = http.StatusForbidden, err.Error()+"\n"
		}
		fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
			status, http.StatusText(status), len(msg), msg)
	})
	if err != nil {
		return fmt.Errorf("sandbox: reports: %w", err)
	}
	return nil
}

// receive reads one report from c, once its sender is known to be a box's first process.
func receive(c net.Conn, report func(Report)) error {
	if err := fromBoxInit(c); err != nil {
		return fmt.Errorf("a report from another process than the box's first: %w", err)
	}
	req, err := http.ReadRequest(bufio.NewReader(c))
	if err != nil {
		return fmt.Errorf("a box's report: %w", err)
	}
	defer req.Body.Close()
	if req.Method != http.MethodPost || req.URL.Path != reportPath {
		return fmt.Errorf("no such request: %s %s", req.Method, req.URL.Path)
	}
	var r Report
	if err := json.NewDecoder(io.LimitReader(req.Body, maxReportBody)).Decode(&r); err != nil {
		return fmt.Errorf("a box's report: %w", err)
	}
	kept := r.Attempts[:0]
	for _, a := range r.Attempts {
		if a.Count > 0 && (a.Write || a.Kind.Network() || existsOnHost(a)) {
			kept = append(kept, a)
		}
	}
	r.Attempts = kept
	if len(r.Attempts) > 0 || r.More > 0 || r.Unrecorded != "" {
		report(r)
	}
	return nil
}

// existsOnHost reports whether what a read attempt named is there on the host: the path, or for a /proc entry
// the process.
func existsOnHost(a Attempt) bool {
	path := a.Path
	if a.Kind == AttemptProc {
		pid, _, _ := cutProcPID(path)
		path = "/proc/" + strconv.Itoa(pid)
	}
	_, err := os.Lstat(path)
	return !errors.Is(err, os.ErrNotExist)
}
