package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aceworks/ace/pkg/workflow"
)

// Receiver is one place notifications go.
type Receiver struct {
	Kind   string   // "webhook", "slack" or "ntfy"
	URL    string   // a secret for Slack: never logged (the logger's redactor is taught it by the caller)
	Events []string // empty: every event
}

// Options configure a Notifier.
type Options struct {
	Receivers []Receiver
	Client    *http.Client // default: a client with a 10s timeout
	Logger    *slog.Logger
	// Queue bounds the messages waiting per receiver (default 100): past it new ones are dropped and counted.
	Queue int
	// Attempts bounds the sends of one message (default 5); Backoff is the wait before attempt n+1 (default
	// 1s, 2s, 4s … capped at a minute).
	Attempts int
	Backoff  func(n int) time.Duration
	// Link, when set, makes the link of a run's message: the run on the dashboard.
	Link func(runID int64) string
	Now  func() time.Time
}

// Notifier sends run events to its receivers.
type Notifier struct {
	o     Options
	sinks []*sink
	sent  atomic.Int64
	lost  atomic.Int64
}

type sink struct {
	r     Receiver
	queue chan Message
	want  map[string]bool
}

// New returns a notifier; Run makes it work.
func New(o Options) *Notifier {
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Queue <= 0 {
		o.Queue = 100
	}
	if o.Attempts <= 0 {
		o.Attempts = 5
	}
	if o.Backoff == nil {
		o.Backoff = func(n int) time.Duration { return min(time.Second<<n, time.Minute) }
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	n := &Notifier{o: o}
	for _, r := range o.Receivers {
		s := &sink{r: r, queue: make(chan Message, o.Queue), want: map[string]bool{}}
		for _, e := range r.Events {
			s.want[e] = true
		}
		n.sinks = append(n.sinks, s)
	}
	return n
}

// Sent counts messages receivers accepted; Lost those dropped (queue full, or every attempt failed).
func (n *Notifier) Sent() int64 { return n.sent.Load() }

// Lost counts messages dropped: a full queue, or every attempt failed.
func (n *Notifier) Lost() int64 { return n.lost.Load() }

// Run reads run events until events is closed or ctx ends, and returns once every receiver's goroutine has
// finished (messages still queued when ctx ends are dropped).
func (n *Notifier) Run(ctx context.Context, events <-chan workflow.Progress) {
	var wg sync.WaitGroup
	for _, s := range n.sinks {
		wg.Go(func() { n.deliver(ctx, s) })
	}
	defer func() {
		for _, s := range n.sinks {
			close(s.queue)
		}
		wg.Wait()
	}()
	seen := newSeen(1024)
	for {
		var p workflow.Progress
		var ok bool
		select {
		case <-ctx.Done():
			return
		case p, ok = <-events:
			if !ok {
				return
			}
		}
		event, ok := Classify(p)
		if !ok || p.Run == nil {
			continue
		}
		// A pull request "opened or found" again, or a failure reported twice, is one event for a person.
		if event != NeedsInput && !seen.add(fmt.Sprintf("%d/%s", p.Run.ID, event)) {
			continue
		}
		var link string
		if n.o.Link != nil {
			link = n.o.Link(p.Run.ID)
		}
		m := newMessage(event, p, link, n.o.Now())
		for _, s := range n.sinks {
			if len(s.want) > 0 && !s.want[event] {
				continue
			}
			select {
			case s.queue <- m:
			default:
				n.lost.Add(1)
				n.o.Logger.WarnContext(ctx, "notification dropped: the receiver's queue is full", "kind", s.r.Kind, "event", event)
			}
		}
	}
}

// deliver sends a receiver's messages one at a time, each retried with backoff.
func (n *Notifier) deliver(ctx context.Context, s *sink) {
	for m := range s.queue {
		if ctx.Err() != nil {
			n.lost.Add(1)
			continue
		}
		var err error
		for attempt := 0; attempt < n.o.Attempts; attempt++ {
			if attempt > 0 {
				t := time.NewTimer(n.o.Backoff(attempt - 1))
				select {
				case <-ctx.Done():
					t.Stop()
				case <-t.C:
				}
				if ctx.Err() != nil {
					break
				}
			}
			if err = n.send(ctx, s.r, m); err == nil || errors.Is(err, errPermanent) {
				break
			}
		}
		if err != nil {
			n.lost.Add(1)
			n.o.Logger.WarnContext(ctx, "notification not delivered", "kind", s.r.Kind, "event", m.Event,
				"repo", m.Repo, "issue", m.Issue, "err", err)
			continue
		}
		n.sent.Add(1)
	}
}

// errPermanent marks a refusal retrying will not change (a 4xx other than 408 and 429).
var errPermanent = errors.New("refused")

func (n *Notifier) send(ctx context.Context, r Receiver, m Message) error {
	req, err := request(ctx, r, m)
	if err != nil {
		return fmt.Errorf("%w: %v", errPermanent, err)
	}
	resp, err := n.o.Client.Do(req)
	if err != nil {
		var ue interface{ Unwrap() error }
		if errors.As(err, &ue) {
			err = ue.Unwrap() // *url.Error carries the URL, a secret for Slack
		}
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode < 300:
		return nil
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode >= 500:
		return fmt.Errorf("receiver answered %s", resp.Status)
	default:
		return fmt.Errorf("%w: receiver answered %s", errPermanent, resp.Status)
	}
}

// request shapes m the way the receiver's kind expects.
func request(ctx context.Context, r Receiver, m Message) (*http.Request, error) {
	var body []byte
	ctype := "application/json"
	switch r.Kind {
	case "webhook":
		body, _ = json.Marshal(m)
	case "slack":
		text := m.Text
		if m.Details != "" {
			text += "\n> " + strings.ReplaceAll(oneLine(m.Details, 300), "\n", "\n> ")
		}
		if link := firstOf(m.PRURL, m.Link); link != "" {
			text += "\n<" + link + ">"
		}
		body, _ = json.Marshal(map[string]string{"text": text})
	case "ntfy":
		body = []byte(firstOf(oneLine(m.Details, 500), m.Text))
		ctype = "text/plain; charset=utf-8"
	default:
		return nil, fmt.Errorf("unknown receiver kind %q", r.Kind)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(body))
	if err != nil {
		return nil, errors.New("bad receiver URL")
	}
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("User-Agent", "ace-notify")
	if r.Kind == "ntfy" {
		req.Header.Set("Title", m.Text)
		req.Header.Set("Tags", m.Event)
		if m.Event == NeedsInput || m.Event == Failed {
			req.Header.Set("Priority", "high")
		}
		if link := firstOf(m.PRURL, m.Link); link != "" {
			req.Header.Set("Click", link)
		}
	}
	return req, nil
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

func oneLine(s string, max int) string {
	s = strings.TrimSpace(s)
	if r := []rune(s); len(r) > max {
		s = string(r[:max]) + "…"
	}
	return s
}

// seenSet remembers the last n keys.
type seenSet struct {
	keys  map[string]bool
	order []string
	n     int
}

func newSeen(n int) *seenSet { return &seenSet{keys: map[string]bool{}, n: n} }

// add reports whether key is new, and remembers it.
func (s *seenSet) add(key string) bool {
	if s.keys[key] {
		return false
	}
	s.keys[key] = true
	s.order = append(s.order, key)
	if len(s.order) > s.n {
		delete(s.keys, s.order[0])
		s.order = s.order[1:]
	}
	return true
}
