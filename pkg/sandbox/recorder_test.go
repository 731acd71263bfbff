package sandbox

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// reportSink is a stand-in for ace's report socket that takes any report (ServeReports would refuse this test
// process, which is no box's first process).
type reportSink struct {
	mu      sync.Mutex
	reports []Report
	srv     *http.Server
}

func serveSink(t *testing.T, sock string) *reportSink {
	t.Helper()
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	s := &reportSink{}
	s.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rep Report
		if r.URL.Path != reportPath || json.NewDecoder(r.Body).Decode(&rep) != nil {
			http.Error(w, "bad report", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.reports = append(s.reports, rep)
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})}
	go s.srv.Serve(ln)
	t.Cleanup(func() { s.srv.Close() })
	return s
}

// TestRecorderBoundsAndRetries: an attempt made again is counted, not named again; past maxRecordedPaths
// distinct attempts only a count goes; what could not be sent (ace away) goes with the next report.
func TestRecorderBoundsAndRetries(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "report.sock")
	r := newRecorder(sock)
	looped := Attempt{Kind: AttemptHidden, Op: "openat", Path: "/home/u/.ssh/id_ed25519"}
	for range 5 {
		r.add(looped)
	}
	for i := range 300 {
		r.add(Attempt{Kind: AttemptWrite, Op: "openat", Write: true, Path: fmt.Sprintf("/usr/pwned-%d", i)})
	}
	r.note("a reason")
	r.note("a reason")
	deadline := func() time.Time { return time.Now().Add(5 * time.Second) }
	if err := r.report(deadline()); err == nil {
		t.Fatal("a report with nobody listening went through")
	}
	sink := serveSink(t, sock)
	if err := r.report(deadline()); err != nil {
		t.Fatal(err)
	}
	r.add(looped)
	r.add(looped)
	if err := r.report(deadline()); err != nil {
		t.Fatal(err)
	}
	if err := r.report(deadline()); err != nil { // nothing new: nothing sent
		t.Fatal(err)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if len(sink.reports) != 2 {
		t.Fatalf("%d reports, want 2: %+v", len(sink.reports), sink.reports)
	}
	first, second := sink.reports[0], sink.reports[1]
	count := func(rep Report, path string) int {
		for _, a := range rep.Attempts {
			if a.Path == path {
				return a.Count
			}
		}
		return 0
	}
	if len(first.Attempts) != maxRecordedPaths || first.More != 300-(maxRecordedPaths-1) || count(first, looped.Path) != 5 ||
		first.Unrecorded != "a reason" {
		t.Errorf("first report: %d attempts, %d more, %d of the looped one, unrecorded %q; want %d, %d, 5, %q",
			len(first.Attempts), first.More, count(first, looped.Path), first.Unrecorded,
			maxRecordedPaths, 300-(maxRecordedPaths-1), "a reason")
	}
	if len(second.Attempts) != 1 || count(second, looped.Path) != 2 || second.More != 0 || second.Unrecorded != "" {
		t.Errorf("second report: %+v, want the looped attempt twice", second)
	}
}
