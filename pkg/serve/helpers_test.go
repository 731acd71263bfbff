package serve

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/secrets"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// engine stands in for the workflow engine in the API's unit tests: it publishes the events a test gives it
// and records the actions asked of it. The end-to-end test drives the real engine.
type engine struct {
	mu      sync.Mutex
	subs    map[chan workflow.Progress]bool
	actions []string
	screen  string
	st      *store.Store
}

func (e *engine) Subscribe(buffer int) (<-chan workflow.Progress, func()) {
	ch := make(chan workflow.Progress, buffer)
	e.mu.Lock()
	if e.subs == nil {
		e.subs = map[chan workflow.Progress]bool{}
	}
	e.subs[ch] = true
	e.mu.Unlock()
	return ch, func() { e.mu.Lock(); delete(e.subs, ch); e.mu.Unlock() }
}

func (e *engine) publish(p workflow.Progress) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for ch := range e.subs {
		ch <- p
	}
}

func (e *engine) subscribers() int { e.mu.Lock(); defer e.mu.Unlock(); return len(e.subs) }

func (e *engine) record(a string) { e.mu.Lock(); e.actions = append(e.actions, a); e.mu.Unlock() }

func (e *engine) done() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.actions...)
}

func (e *engine) Stop(ctx context.Context, r *store.Run, reason string) error {
	e.record("stop " + reason)
	r.Status, r.Step = store.StatusCancelled, "cancelled"
	return e.st.UpdateRun(ctx, r, &store.Event{Kind: "stop", Message: reason})
}
func (e *engine) Send(_ context.Context, _ *store.Run, text string) error {
	e.record("send " + text)
	return nil
}
func (e *engine) Nudge(context.Context, *store.Run) error { e.record("nudge"); return nil }
func (e *engine) Screen(_ context.Context, r *store.Run, _ int) (string, error) {
	if r.Session == "" {
		return "", workflow.ErrNoSession
	}
	return e.screen, nil
}

// queue records what webhooks enqueue.
type queue struct {
	mu    sync.Mutex
	calls []string
}

func (q *queue) Dispatch(context.Context) error {
	q.mu.Lock()
	q.calls = append(q.calls, "dispatch")
	q.mu.Unlock()
	return nil
}
func (q *queue) Wake(_ context.Context, repo string, issue int) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.calls = append(q.calls, "wake "+repo+"#"+itoa(issue))
	return nil
}
func (q *queue) got() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]string(nil), q.calls...)
}

const secretValue = "sk-live-very-secret-value-123"

type fixture struct {
	t      *testing.T
	st     *store.Store
	eng    *engine
	q      *queue
	srv    *Server
	http   *httptest.Server
	runs   map[int]*store.Run // by issue
	cancel context.CancelFunc
}

// newFixture serves a real store holding one run per spec, "status/step" or "status/step/pr".
func newFixture(t *testing.T, tune func(*Options), specs ...string) *fixture {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "ace.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := &fixture{t: t, st: st, eng: &engine{st: st, screen: "fake-agent ready\n› working on it"}, q: &queue{}, runs: map[int]*store.Run{}}
	titles := []string{"Add a greeting", "Fix the flaky login test", "Document the config keys", "Speed up the importer",
		"Rename the CLI flags", "Handle empty CSV files", "Upgrade the Go toolchain", "Add dark mode", "Cache avatars",
		"Remove the legacy API", "Paginate the audit log", "Retry webhooks with backoff", "Trim the Docker image"}
	for i, spec := range specs {
		parts := strings.Split(spec, "/")
		r := &store.Run{Repo: "acme/widgets", Issue: 100 + i, Attempt: 1, Agent: []string{"claude", "codex", "gemini"}[i%3],
			Runner: "tmux", Step: parts[1], Status: store.Status(parts[0]), State: store.RunState{Title: titles[i%len(titles)]}}
		if err := st.CreateRun(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		r.Session = "ace-widgets-" + itoa(r.Issue)
		switch r.Status {
		case store.StatusWaitingInput:
			r.State.Question = "Should the greeting be formal or casual?"
		case store.StatusFailed:
			r.Error = "push refused: token " + secretValue + " lacks scope"
		}
		if len(parts) > 2 {
			r.PRNumber, r.PRURL = 400+i, "https://github.com/acme/widgets/pull/"+itoa(400+i)
		}
		r.Nudges = i % 3
		if err := st.UpdateRun(context.Background(), r, &store.Event{Kind: "transition", Step: r.Step, Message: "claim → " + r.Step}); err != nil {
			t.Fatal(err)
		}
		f.runs[r.Issue] = r
	}
	red := secrets.NewRedactor()
	red.Add(secretValue)
	o := Options{Store: st, Engine: f.eng, Queue: f.q, Root: t.TempDir(), Redactor: red, WebhookSecret: "hook-secret",
		TriggerLabel: "ace", StorePoll: 50 * time.Millisecond, Host: "build-01"}
	if tune != nil {
		tune(&o)
	}
	srv, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	f.srv = srv
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	done := make(chan struct{})
	go func() { srv.Run(ctx); close(done) }()
	f.http = httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		cancel()
		<-done
		f.http.Close()
	})
	// The live side is running once it has subscribed to the engine.
	for f.eng.subscribers() == 0 {
		time.Sleep(time.Millisecond)
	}
	return f
}

func (f *fixture) do(method, path, body string, hdr map[string]string) *http.Response {
	f.t.Helper()
	req, err := http.NewRequest(method, f.http.URL+path, strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func sign(secret, body string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(body))
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}
