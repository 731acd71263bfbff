package notify

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// receiver records what it was sent; it fails the first failFirst requests with 503.
type receiver struct {
	mu        sync.Mutex
	bodies    []string
	headers   []http.Header
	failFirst int
	calls     int
	got       chan struct{}
}

func newReceiver(t *testing.T, failFirst int) (*receiver, *httptest.Server) {
	rc := &receiver{failFirst: failFirst, got: make(chan struct{}, 100)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.calls++
		fail := rc.calls <= rc.failFirst
		if !fail {
			rc.bodies = append(rc.bodies, string(b))
			rc.headers = append(rc.headers, r.Header.Clone())
		}
		rc.mu.Unlock()
		if fail {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		rc.got <- struct{}{}
	}))
	t.Cleanup(srv.Close)
	return rc, srv
}

func (rc *receiver) wait(t *testing.T, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		select {
		case <-rc.got:
		case <-time.After(10 * time.Second):
			t.Fatalf("received %d messages, want %d", i, n)
		}
	}
}

func run(id int64) *store.Run {
	return &store.Run{ID: id, Repo: "acme/widgets", Issue: int(id), Agent: "fake", Status: store.StatusActive,
		PRURL: "https://github.example/acme/widgets/pull/9", State: store.RunState{Title: "Add a greeting", Question: "Formal or casual?"}}
}

// TestEachReceiverGetsOneMessagePerEvent: three receivers of three kinds; each event a receiver asked for
// arrives exactly once (a pull request found again is not a second event), a receiver failing twice is retried,
// and events nobody notifies about are ignored.
func TestEachReceiverGetsOneMessagePerEvent(t *testing.T) {
	t.Parallel()
	hook, hookSrv := newReceiver(t, 2)
	slack, slackSrv := newReceiver(t, 0)
	ntfy, ntfySrv := newReceiver(t, 0)
	n := New(Options{
		Receivers: []Receiver{
			{Kind: "webhook", URL: hookSrv.URL},
			{Kind: "slack", URL: slackSrv.URL, Events: []string{Failed}},
			{Kind: "ntfy", URL: ntfySrv.URL, Events: []string{NeedsInput, PROpened}},
		},
		Backoff: func(int) time.Duration { return 10 * time.Millisecond },
		Link:    func(id int64) string { return "http://127.0.0.1:7777/#run-1" },
	})
	events := make(chan workflow.Progress, 10)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { n.Run(ctx, events); close(done) }()
	events <- workflow.Progress{Run: run(1), Kind: workflow.EventQuestion, Step: workflow.StepMonitor}
	events <- workflow.Progress{Run: run(1), Kind: workflow.EventNudge, Step: workflow.StepMonitor}
	events <- workflow.Progress{Run: run(1), Kind: workflow.EventPullRequest, Step: workflow.StepFinalize}
	events <- workflow.Progress{Run: run(1), Kind: workflow.EventPullRequest, Step: workflow.StepFinalize}
	events <- workflow.Progress{Run: run(2), Kind: workflow.EventStep, Step: workflow.StepFailed, Message: "boom"}

	hook.wait(t, 3)
	slack.wait(t, 1)
	ntfy.wait(t, 2)
	time.Sleep(100 * time.Millisecond) // nothing more may arrive
	cancel()
	<-done

	var msgs []Message
	for _, b := range hook.bodies {
		var m Message
		if err := json.Unmarshal([]byte(b), &m); err != nil {
			t.Fatalf("webhook body %q: %v", b, err)
		}
		msgs = append(msgs, m)
	}
	if len(msgs) != 3 || msgs[0].Event != NeedsInput || msgs[1].Event != PROpened || msgs[2].Event != Failed {
		t.Fatalf("webhook got %+v", msgs)
	}
	if msgs[0].Details != "Formal or casual?" || msgs[0].Repo != "acme/widgets" || msgs[2].Details != "boom" {
		t.Errorf("webhook messages lack their details: %+v", msgs)
	}
	if len(slack.bodies) != 1 || !json.Valid([]byte(slack.bodies[0])) {
		t.Fatalf("slack got %q", slack.bodies)
	}
	var sm map[string]string
	_ = json.Unmarshal([]byte(slack.bodies[0]), &sm)
	if sm["text"] == "" {
		t.Errorf("slack message has no text: %q", slack.bodies[0])
	}
	if len(ntfy.bodies) != 2 || ntfy.headers[0].Get("Tags") != NeedsInput || ntfy.headers[0].Get("Title") == "" ||
		ntfy.headers[1].Get("Click") != "https://github.example/acme/widgets/pull/9" {
		t.Fatalf("ntfy got %q %v", ntfy.bodies, ntfy.headers)
	}
	if n.Sent() != 6 || n.Lost() != 0 {
		t.Errorf("sent %d lost %d, want 6 and 0", n.Sent(), n.Lost())
	}
}

// TestAFailingReceiverNeverBlocks: a receiver that hangs does not slow the reading of events (the engine's
// subscription never fills up); its queue overflows and the excess is counted as lost.
func TestAFailingReceiverNeverBlocks(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hang.Close()
	defer close(release)
	n := New(Options{Receivers: []Receiver{{Kind: "webhook", URL: hang.URL}}, Queue: 2, Attempts: 1})
	events := make(chan workflow.Progress) // unbuffered: each send waits for Run to take it
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { n.Run(ctx, events); close(done) }()
	start := time.Now()
	for i := int64(1); i <= 50; i++ {
		events <- workflow.Progress{Run: run(i), Kind: workflow.EventQuestion}
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("50 events took %s to hand over to a notifier whose receiver hangs", d)
	}
	if n.Lost() < 40 {
		t.Fatalf("lost %d, want the overflow counted", n.Lost())
	}
	cancel()
	<-done
}
