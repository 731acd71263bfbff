package live_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/live"
)

func TestStreamKeepsOrderAndNeverBlocks(t *testing.T) {
	s := live.NewStream()
	for i := range 1000 { // nobody reads yet: Emit must not block
		s.Emit(live.Text{Text: strings.Repeat("x", i%7)})
	}
	s.End()
	s.Emit(live.Text{Text: "after the end"}) // dropped
	n := 0
	for e := range s.Events() {
		if e.(live.Text).Text != strings.Repeat("x", n%7) {
			t.Fatalf("event %d out of order: %#v", n, e)
		}
		n++
	}
	if n != 1000 {
		t.Fatalf("%d events, want 1000", n)
	}
}

func TestStreamAbandonDropsTheRest(t *testing.T) {
	s := live.NewStream()
	s.Emit(live.Text{Text: "a"})
	s.Emit(live.Text{Text: "b"})
	s.Abandon()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case _, ok := <-s.Events():
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("the channel was not closed after Abandon")
		}
	}
}

// peer is the other end of a Conn: it reads what the Conn writes and writes what the Conn reads.
type peer struct {
	in  *json.Decoder  // what the Conn wrote
	out *io.PipeWriter // what the Conn reads
}

func newConn(t *testing.T, handle func(live.Incoming)) (*live.Conn, *peer, chan error) {
	t.Helper()
	toConn, fromPeer := io.Pipe()
	fromConn, toPeer := io.Pipe()
	c := live.NewConn(func(b []byte) error {
		_, err := toPeer.Write(append(b, '\n'))
		return err
	})
	done := make(chan error, 1)
	go func() { done <- c.Serve(toConn, handle, nil) }()
	t.Cleanup(func() { _ = fromPeer.Close(); _ = toPeer.Close() })
	return c, &peer{in: json.NewDecoder(fromConn), out: fromPeer}, done
}

func (p *peer) read(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := p.in.Decode(&m); err != nil {
		t.Fatalf("peer read: %v", err)
	}
	return m
}

func (p *peer) write(t *testing.T, s string) {
	t.Helper()
	if _, err := io.WriteString(p.out, s+"\n"); err != nil {
		t.Fatalf("peer write: %v", err)
	}
}

func TestConnCallWhileThePeerAsks(t *testing.T) {
	asked := make(chan live.Incoming, 1)
	c, p, _ := newConn(t, func(m live.Incoming) { asked <- m })
	result := make(chan error, 1)
	var got struct{ Answer string }
	go func() { result <- c.Call(context.Background(), "turn/start", map[string]any{"x": 1}, &got) }()

	req := p.read(t)
	if req["jsonrpc"] != "2.0" || req["method"] != "turn/start" {
		t.Fatalf("request %v", req)
	}
	// Before answering, the peer asks a question of its own (an approval), with a string id.
	p.write(t, `{"jsonrpc":"2.0","id":"a-1","method":"session/request_permission","params":{"tool":"write"}}`)
	m := <-asked
	if m.Method != "session/request_permission" || string(m.Params) != `{"tool":"write"}` {
		t.Fatalf("incoming %+v", m)
	}
	replied := make(chan error, 1)
	go func() { replied <- m.Reply(map[string]any{"outcome": "allow"}) }() // the pipe blocks until the peer reads
	if reply := p.read(t); reply["id"] != "a-1" || reply["result"].(map[string]any)["outcome"] != "allow" {
		t.Fatalf("reply %v", reply)
	}
	if err := <-replied; err != nil {
		t.Fatal(err)
	}
	p.write(t, `{"jsonrpc":"2.0","id":`+jsonNumber(req["id"])+`,"result":{"Answer":"ok"}}`)
	if err := <-result; err != nil || got.Answer != "ok" {
		t.Fatalf("call = %v, %+v", err, got)
	}
}

func TestConnErrorsAndEnd(t *testing.T) {
	c, p, done := newConn(t, func(live.Incoming) {})
	result := make(chan error, 2)
	go func() { result <- c.Call(context.Background(), "session/prompt", nil, nil) }()
	req := p.read(t)
	p.write(t, `{"jsonrpc":"2.0","id":`+jsonNumber(req["id"])+`,"error":{"code":429,"message":"quota"}}`)
	var rpc *live.RPCError
	if err := <-result; !errors.As(err, &rpc) || rpc.Code != 429 || rpc.Message != "quota" {
		t.Fatalf("error = %v, want the 429 RPCError", err)
	}

	go func() { result <- c.Call(context.Background(), "session/prompt", nil, nil) }()
	p.read(t)
	_ = p.out.Close() // the CLI is gone
	if err := <-result; !errors.Is(err, live.ErrClosed) {
		t.Fatalf("pending call = %v, want ErrClosed", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Serve = %v, want nil at EOF", err)
	}
	if err := c.Call(context.Background(), "x", nil, nil); !errors.Is(err, live.ErrClosed) {
		t.Fatalf("call after the end = %v", err)
	}
}

func TestConnCallContext(t *testing.T) {
	c, p, _ := newConn(t, func(live.Incoming) {})
	ctx, cancel := context.WithCancel(context.Background())
	result := make(chan error, 1)
	go func() { result <- c.Call(ctx, "slow", nil, nil) }()
	p.read(t)
	cancel()
	if err := <-result; !errors.Is(err, context.Canceled) {
		t.Fatalf("call = %v, want context.Canceled", err)
	}
}

func jsonNumber(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestPermissionAndQuestionAnswers(t *testing.T) {
	var got []string
	p := live.NewPermission("t1", "Write", "", "{}", func(_ context.Context, allow bool, reason string) error {
		got = append(got, map[bool]string{true: "allow", false: "deny:" + reason}[allow])
		return nil
	})
	_ = p.Allow(context.Background())
	_ = p.Deny(context.Background(), "no")
	q := live.NewQuestion("q1", []live.Ask{{Text: "Which?", Options: []string{"A", "B"}}},
		func(_ context.Context, answers []string) error { got = append(got, answers...); return nil })
	_ = q.AnswerOption(context.Background(), 1)
	_ = q.Answer(context.Background(), "free text")
	if err := q.AnswerOption(context.Background(), 2); err == nil {
		t.Errorf("option 2 of 2 was taken")
	}
	if err := q.Answer(context.Background(), "a", "b"); err == nil {
		t.Errorf("two answers to one question were taken")
	}
	if err := (live.Permission{}).Allow(context.Background()); err == nil {
		t.Errorf("a permission without a way to answer was answered")
	}
	if strings.Join(got, ",") != "allow,deny:no,B,free text" {
		t.Errorf("answers %q", got)
	}
}

func TestUsagePrompt(t *testing.T) {
	u := live.Usage{InputTokens: 1, CachedTokens: 2, CacheWriteTokens: 3, OutputTokens: 100}
	if u.Prompt() != 6 {
		t.Errorf("Prompt = %d, want 6", u.Prompt())
	}
}

// A request takes one answer, or is withdrawn first: whichever comes second fails or is no withdrawal.
func TestOnce(t *testing.T) {
	var answered, withdrawn live.Once
	calls := 0
	reply := func() error { calls++; return nil }
	if err := answered.Answer(reply); err != nil || calls != 1 {
		t.Fatalf("first answer: %v, %d calls", err, calls)
	}
	if err := answered.Answer(reply); !errors.Is(err, live.ErrAnswered) || calls != 1 {
		t.Errorf("second answer: %v, %d calls", err, calls)
	}
	if answered.Withdraw() {
		t.Errorf("an answered request was withdrawn")
	}
	if !withdrawn.Withdraw() || withdrawn.Withdraw() {
		t.Errorf("a withdrawal is not once")
	}
	if err := withdrawn.Answer(reply); !errors.Is(err, live.ErrWithdrawn) || calls != 1 {
		t.Errorf("answering a withdrawn request: %v, %d calls", err, calls)
	}
}
