package livehost

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/testkit"
	"github.com/aceworks/ace/pkg/live"
	"github.com/aceworks/ace/pkg/usage"
)

// replies records the answers the fake conversation's requests got.
type replies struct {
	allow   chan [2]string // "true"/"false" and the reason
	answers chan []string
}

func newReplies() *replies {
	return &replies{allow: make(chan [2]string, 4), answers: make(chan []string, 4)}
}

func (r *replies) permission(id string) live.Permission {
	return live.NewPermission(id, "Write", "Write OUT.txt", `{"file_path":"OUT.txt"}`,
		func(_ context.Context, allow bool, reason string) error {
			r.allow <- [2]string{fmt.Sprint(allow), reason}
			return nil
		})
}

func (r *replies) question(id string, asks ...live.Ask) live.Question {
	if len(asks) == 0 {
		asks = []live.Ask{{Text: "Which colour?", Options: []string{"Red", "Blue"}}}
	}
	return live.NewQuestion(id, asks, func(_ context.Context, answers []string) error {
		r.answers <- answers
		return nil
	})
}

func pendingIs(ids ...string) func(Status) bool {
	return func(s Status) bool {
		var got []string
		for _, p := range s.Pending {
			got = append(got, p.ID)
		}
		return strings.Join(got, ",") == strings.Join(ids, ",")
	}
}

// The socket protocol end to end against a fake conversation: a message, a permission and questions answered
// over the socket, an interrupt, a turn's end and usage, then a stop as on SIGTERM.
func TestSocketProtocol(t *testing.T) {
	t.Parallel()
	fh := startFakeHost(t, false, nil)
	ctx, rp := t.Context(), newReplies()
	fh.waitStatus("the host answers with its session", func(s Status) bool { return s.SessionID == "fake-session" })

	if err := fh.client.Send(ctx, "do the task: \"quoted\" $HOME"); err != nil {
		t.Fatal(err)
	}
	if got := fh.sent(); got != "do the task: \"quoted\" $HOME" {
		t.Errorf("the conversation got %q", got)
	}
	fh.conv.Emit(rp.permission("p1"))
	s := fh.waitStatus("permission p1 pending", pendingIs("p1"))
	if p := s.Pending[0]; p.Kind != KindPermission || p.Seq == 0 || p.Tool != "Write" || !s.Busy {
		t.Errorf("status %+v", s)
	}
	if err := fh.client.Allow(ctx, "p1", true); err != nil {
		t.Fatal(err)
	}
	if got := <-rp.allow; got[0] != "true" {
		t.Errorf("the permission got %v, want allowed", got)
	}
	if err := fh.client.Allow(ctx, "p1", false); !errors.Is(err, ErrNotPending) {
		t.Errorf("a second answer: %v, want ErrNotPending", err)
	}
	if err := fh.client.Answer(ctx, "p1", "yes"); !errors.Is(err, ErrNotPending) {
		t.Errorf("a permission answered as a question: %v, want ErrNotPending", err)
	}

	const free = "None of them: \"teal\", as in $TEAL."
	for _, q := range []struct{ id, answer, want string }{
		{"q1", "2", "Blue"}, {"q2", " red", "Red"}, {"q3", free, free},
	} {
		fh.conv.Emit(rp.question(q.id))
		fh.waitStatus("question "+q.id+" pending", pendingIs(q.id))
		if err := fh.client.Answer(ctx, q.id, q.answer); err != nil {
			t.Fatal(err)
		}
		if got := <-rp.answers; len(got) != 1 || got[0] != q.want {
			t.Errorf("answer %q reached the agent as %q, want %q", q.answer, got, q.want)
		}
	}
	if err := fh.client.Interrupt(ctx); err != nil || fh.conv.interrupts.Load() != 1 {
		t.Errorf("interrupt: %v, %d interrupts", err, fh.conv.interrupts.Load())
	}
	fh.conv.Emit(live.TurnDone{Stop: live.Interrupted, Usage: live.Usage{InputTokens: 10, OutputTokens: 5, CachedTokens: 3}})
	fh.waitStatus("the turn's end", func(s Status) bool { return s.Turns == 1 && !s.Busy })

	fh.stop(errors.New("stopped by terminated"))
	if code := fh.exit(); code != 0 {
		t.Errorf("exit code %d after a stop, want 0", code)
	}
	if !fh.conv.closed.Load() {
		t.Errorf("the conversation was not closed")
	}
	if _, err := fh.client.Status(ctx); !errors.Is(err, ErrNotRunning) {
		t.Errorf("status after the stop: %v, want ErrNotRunning", err)
	}
	if _, err := os.Stat(fh.spec.Socket); !os.IsNotExist(err) {
		t.Errorf("the socket is left: %v", err)
	}
	recs, _ := ReadTranscript(fh.spec.Transcript, 0)
	want := "session user:ace permission answered:ace question answered:ace question answered:ace question answered:ace turn_done exit"
	if got := kinds(recs); got != want {
		t.Errorf("transcript %s\nwant       %s", got, want)
	}
	last := recs[len(recs)-1]
	if last.Text != "stopped by terminated" {
		t.Errorf("exit record %+v", last)
	}
	done := recs[len(recs)-2]
	if done.Status != live.Interrupted || *done.Usage != (usage.Usage{InputTokens: 10, OutputTokens: 5, CacheReadTokens: 3}) {
		t.Errorf("turn_done %+v usage %+v", done, done.Usage)
	}
	if a := recs[3]; a.ID != "p1" || a.Allow == nil || !*a.Allow {
		t.Errorf("answered %+v", a)
	}
	if a := recs[9]; a.Text != free {
		t.Errorf("free-text answer recorded as %q", a.Text)
	}
}

// Lines typed in the pane: a message with nothing pending, y/n (with a reason) for a permission, an answer per
// line for a question of several asks.
func TestTerminal(t *testing.T) {
	t.Parallel()
	fh := startFakeHost(t, false, nil)
	rp := newReplies()

	fh.typeLine("a typed line with 'quotes'")
	if got := fh.sent(); got != "a typed line with 'quotes'" {
		t.Errorf("the conversation got %q", got)
	}
	fh.conv.Emit(rp.permission("p1"))
	fh.waitStatus("permission pending", pendingIs("p1"))
	fh.typeLine("maybe")
	fh.typeLine("n, use IN.txt instead")
	if got := <-rp.allow; got != [2]string{"false", "use IN.txt instead"} {
		t.Errorf("the permission got %v, want denied with the reason", got)
	}
	if !strings.Contains(fh.pane.String(), "permission p1 waits: type y") {
		t.Errorf("no hint after a line that is no answer:\n%s", fh.pane)
	}
	fh.conv.Emit(rp.question("q1",
		live.Ask{Text: "Which colour?", Options: []string{"Red", "Blue"}},
		live.Ask{Text: "Which size?", Options: []string{"S", "M"}}))
	fh.waitStatus("question pending", pendingIs("q1"))
	fh.typeLine("blue")
	testkit.WaitFor(t, "the second ask shown", 10*time.Second, func() bool { return strings.Contains(fh.pane.String(), "question 2 of 2: Which size?") })
	fh.typeLine("my own size")
	if got := <-rp.answers; strings.Join(got, "|") != "Blue|my own size" {
		t.Errorf("the answers %q", got)
	}
	recs := fh.records("the answer recorded", func(r Record) bool { return r.Kind == KindAnswered && r.ID == "q1" })
	if got, want := kinds(recs), "session user:terminal permission answered:terminal question answered:terminal"; got != want {
		t.Errorf("transcript %s\nwant       %s", got, want)
	}
	if a := recs[len(recs)-1]; a.Text != "Blue\nmy own size" {
		t.Errorf("answered %q", a.Text)
	}
}

func TestAutoApprove(t *testing.T) {
	t.Parallel()
	fh := startFakeHost(t, true, nil)
	rp := newReplies()
	fh.conv.Emit(rp.permission("p1"))
	if got := <-rp.allow; got[0] != "true" {
		t.Errorf("the permission got %v, want allowed at once", got)
	}
	recs := fh.records("the answer recorded", func(r Record) bool { return r.Kind == KindAnswered })
	if got := kinds(recs); got != "session permission answered:auto_approve" {
		t.Errorf("transcript %s", got)
	}
	if s := fh.waitStatus("status", func(Status) bool { return true }); len(s.Pending) != 0 {
		t.Errorf("pending %+v", s.Pending)
	}
}

// A request the agent withdraws leaves the pending list, is recorded and shown, and can no longer be answered;
// the other stays.
func TestWithdrawn(t *testing.T) {
	t.Parallel()
	fh := startFakeHost(t, false, nil)
	ctx, rp := t.Context(), newReplies()
	fh.conv.Emit(rp.permission("p1"))
	fh.conv.Emit(rp.question("q1"))
	fh.waitStatus("both pending", pendingIs("p1", "q1"))
	fh.conv.Emit(live.Withdrawn{ID: "p1"})
	fh.waitStatus("p1 gone", pendingIs("q1"))
	if err := fh.client.Allow(ctx, "p1", true); !errors.Is(err, ErrNotPending) {
		t.Errorf("allowing a withdrawn permission: %v, want ErrNotPending", err)
	}
	// codex withdraws after the turn's end, which dropped the request already: the record still says so.
	fh.conv.Emit(live.TurnDone{Stop: live.Interrupted})
	fh.conv.Emit(live.Withdrawn{ID: "q1"})
	recs := fh.records("q1 withdrawn", func(r Record) bool { return r.Kind == KindWithdrawn && r.ID == "q1" })
	if got, want := kinds(recs), "session permission question withdrawn turn_done withdrawn"; got != want {
		t.Errorf("transcript %s\nwant       %s", got, want)
	}
	if !strings.Contains(fh.pane.String(), "withdrawn: the agent no longer waits for an answer to p1") {
		t.Errorf("pane:\n%s", fh.pane)
	}
	select {
	case got := <-rp.allow:
		t.Errorf("the withdrawn permission was answered: %v", got)
	default:
	}
}

// A CLI that queues a message sent mid-turn (codex, like the fake) is busy until the queued turn has ended too.
func TestBusyAcrossAQueuedTurn(t *testing.T) {
	t.Parallel()
	fh := startFakeHost(t, false, nil)
	ctx := t.Context()
	for _, m := range []string{"one", "two"} {
		if err := fh.client.Send(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	fh.conv.Emit(live.TurnDone{Stop: live.Completed})
	if s := fh.waitStatus("turn 1 ended", func(s Status) bool { return s.Turns == 1 }); !s.Busy {
		t.Errorf("idle while the queued message's turn is to come")
	}
	fh.conv.Emit(live.TurnDone{Stop: live.Completed})
	fh.waitStatus("idle after turn 2", func(s Status) bool { return s.Turns == 2 && !s.Busy })
}

// A CLI that exits by itself: the exit is recorded with its code and stderr, shown, and the host exits 1.
func TestCLIExits(t *testing.T) {
	t.Parallel()
	fh := startFakeHost(t, false, nil)
	exitErr := exec.Command("sh", "-c", "exit 3").Run()
	fh.conv.Emit(live.Exit{Err: exitErr, Stderr: "starting\npanic: boom\n"})
	if code := fh.exit(); code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	recs, _ := ReadTranscript(fh.spec.Transcript, 0)
	if last := recs[len(recs)-1]; last.Kind != KindExit || last.Code != 3 || !strings.Contains(last.Text, "panic: boom") {
		t.Errorf("last record %+v", last)
	}
	if !strings.Contains(fh.pane.String(), "the agent exited (code 3)") {
		t.Errorf("pane:\n%s", fh.pane)
	}
}

func TestHandshakeFailed(t *testing.T) {
	t.Parallel()
	fh := startFakeHost(t, false, fmt.Errorf("fake: %w: initialize: timed out", live.ErrHandshake))
	if code := fh.exit(); code != ExitHandshake {
		t.Errorf("exit code %d, want %d", code, ExitHandshake)
	}
	recs, _ := ReadTranscript(fh.spec.Transcript, 0)
	if kinds(recs) != "handshake_failed" || !strings.Contains(recs[0].Text, "timed out") {
		t.Errorf("transcript %+v", recs)
	}
	if !strings.Contains(fh.pane.String(), "does not speak its protocol: fake: live: protocol handshake failed") {
		t.Errorf("pane:\n%s", fh.pane)
	}
}

// A socket nobody answers on (its host died) is replaced; one a live host answers on is not.
func TestListen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "s", "host.sock")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	stale, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	stale.Close()
	ln, err := listen(path)
	if err != nil {
		t.Fatalf("a stale socket was not replaced: %v", err)
	}
	defer ln.Close()
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, %v; want 0600", fi.Mode(), err)
	}
	go func() {
		for c, err := ln.Accept(); err == nil; c, err = ln.Accept() {
			c.Close()
		}
	}()
	if _, err := listen(path); err == nil || !strings.Contains(err.Error(), "another live host") {
		t.Errorf("a second host on a live socket: %v", err)
	}
}

func kinds(recs []Record) string {
	var s []string
	for _, r := range recs {
		k := r.Kind
		if r.From != "" {
			k += ":" + r.From
		}
		s = append(s, k)
	}
	return strings.Join(s, " ")
}
