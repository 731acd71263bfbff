package sandbox

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

const (
	// maxRecordedPaths bounds the distinct attempts a box names over its life: past it, attempts are only
	// counted (Report.More). A CLI probing paths, or an agent going through a directory tree, stays a few KiB.
	maxRecordedPaths = 256
	// reportDelay gathers the attempts of a burst into one report.
	reportDelay = 100 * time.Millisecond
	// reportTimeout bounds one report's exchange with the proxy.
	reportTimeout = 5 * time.Second
	// maxRetryDelay is the longest wait between tries while the proxy is away (its ace restarting).
	maxRetryDelay = 30 * time.Second
)

// attemptKey is what makes two attempts the same one: counted together, named once.
type attemptKey struct {
	kind  AttemptKind
	op    string
	write bool
	path  string
	prog  string
}

// recorder gathers what the box's notifier finds and reports it to ace over the report socket, a batch at a
// time: each distinct attempt is named with how often it came up since the last report, so that an agent looping
// on a path costs a counter, not a message each time. What cannot be sent yet (the proxy's ace restarting) waits
// for the next try.
type recorder struct {
	sock string // the report socket; "" keeps everything here (the doctor's probe)

	mu       sync.Mutex
	pending  map[attemptKey]int
	known    map[attemptKey]bool
	more     int
	notes    []string
	noted    map[string]bool
	notified int // calls the notifier saw, recorded or not

	send chan struct{}
	// sending serializes reports: the loop's and the last one at exit.
	sending sync.Mutex
}

func newRecorder(sock string) *recorder {
	return &recorder{sock: sock, pending: map[attemptKey]int{}, known: map[attemptKey]bool{}, noted: map[string]bool{},
		send: make(chan struct{}, 1)}
}

// add counts one attempt.
func (r *recorder) add(a Attempt) {
	k := attemptKey{a.Kind, a.Op, a.Write, a.Path, a.Prog}
	r.mu.Lock()
	switch {
	case r.known[k]:
		r.pending[k]++
	case len(r.known) < maxRecordedPaths:
		r.known[k] = true
		r.pending[k]++
	default:
		r.more++
	}
	r.mu.Unlock()
	r.kick()
}

// note reports why something goes unrecorded, once per reason.
func (r *recorder) note(why string) {
	r.mu.Lock()
	if !r.noted[why] {
		r.noted[why] = true
		r.notes = append(r.notes, why)
	}
	r.mu.Unlock()
	r.kick()
}

// saw counts a notified call (for the doctor's probe, which sends nothing).
func (r *recorder) saw() {
	r.mu.Lock()
	r.notified++
	r.mu.Unlock()
}

func (r *recorder) kick() {
	select {
	case r.send <- struct{}{}:
	default:
	}
}

// run reports what comes in, for as long as the box lives: a burst at a time, again after a failure, waiting
// longer each time up to maxRetryDelay.
func (r *recorder) run() {
	if r.sock == "" {
		return
	}
	for range r.send {
		time.Sleep(reportDelay)
		for wait := time.Second; r.report(time.Now().Add(reportTimeout)) != nil; wait = min(2*wait, maxRetryDelay) {
			time.Sleep(wait)
		}
	}
}

// flush sends what is left, by deadline: the box is ending.
func (r *recorder) flush(deadline time.Time) error {
	if r.sock == "" {
		return nil
	}
	return r.report(deadline)
}

// report sends what has come in since the last report; on failure it is kept for the next.
func (r *recorder) report(deadline time.Time) error {
	r.sending.Lock()
	defer r.sending.Unlock()
	r.mu.Lock()
	rep := Report{More: r.more}
	for k, n := range r.pending {
		rep.Attempts = append(rep.Attempts, Attempt{Kind: k.kind, Op: k.op, Write: k.write, Path: k.path, Prog: k.prog, Count: n})
	}
	notes := r.notes
	r.pending, r.more, r.notes = map[attemptKey]int{}, 0, nil
	r.mu.Unlock()
	if len(rep.Attempts) == 0 && rep.More == 0 && len(notes) == 0 {
		return nil
	}
	for i, n := range notes {
		if i > 0 {
			rep.Unrecorded += "; "
		}
		rep.Unrecorded += n
	}
	err := postReport(r.sock, rep, deadline)
	if err != nil {
		r.mu.Lock()
		for _, a := range rep.Attempts {
			r.pending[attemptKey{a.Kind, a.Op, a.Write, a.Path, a.Prog}] += a.Count
		}
		r.more += rep.More
		r.notes = append(notes, r.notes...)
		r.mu.Unlock()
	}
	return err
}

// postReport sends rep to ace at the report socket sock (ServeReports answers it).
func postReport(sock string, rep Report, deadline time.Time) error {
	body, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	c, err := net.DialTimeout("unix", sock, time.Until(deadline))
	if err != nil {
		return fmt.Errorf("report to ace: %w", err)
	}
	defer c.Close()
	c.SetDeadline(deadline)
	req, err := http.NewRequest(http.MethodPost, "http://ace"+reportPath, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if err := req.Write(c); err != nil {
		return fmt.Errorf("report to ace: %w", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), req)
	if err != nil {
		return fmt.Errorf("report to ace: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("report to ace: %s", resp.Status)
	}
	return nil
}
