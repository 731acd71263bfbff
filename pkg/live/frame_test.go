package live_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/live"
)

// echo is a CLI made of cat: a turn's messages come back as one Text, and the turn ends when the test writes
// "end" (or "end-failing": the next start fails).
type echo struct {
	live.Frame
	starts chan []string
	fail   chan bool // the next StartTurn fails
}

func startEcho(t *testing.T, handshake func(context.Context, live.Options) error) (*echo, error) {
	t.Helper()
	e := &echo{starts: make(chan []string, 8), fail: make(chan bool, 1)}
	if handshake == nil {
		handshake = func(context.Context, live.Options) error { return nil }
	}
	err := e.Start(t.Context(), live.Options{Argv: []string{"cat"}, Env: os.Environ(), Dir: t.TempDir()}, live.CLI{
		Name: "echo", HandshakeTimeout: 10 * time.Second, Read: e.read, Handshake: handshake, StartTurn: e.startTurn})
	if err == nil {
		t.Cleanup(func() { _ = e.Close() })
	}
	return e, err
}

func (e *echo) startTurn(_ context.Context, texts []string) error {
	select {
	case <-e.fail:
		return errors.New("refused")
	default:
	}
	b, _ := json.Marshal(texts)
	err := e.WriteLine(b) // before the test hears of the turn, which it ends by writing a line after this one
	e.starts <- texts
	return err
}

func (e *echo) read(stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		switch l := sc.Text(); l {
		case "end", "end-failing":
			if l == "end-failing" {
				e.fail <- true
			}
			e.EndTurn(func(interrupted bool) {
				d := live.TurnDone{Stop: live.Completed}
				if interrupted {
					d.Stop = live.Interrupted
				}
				e.Emit(d)
			})
		default:
			e.Emit(live.Text{Text: l})
		}
	}
}

func (e *echo) started(t *testing.T) []string {
	t.Helper()
	select {
	case texts := <-e.starts:
		return texts
	case <-time.After(10 * time.Second):
		t.Fatal("no turn started")
		return nil
	}
}

func (e *echo) next(t *testing.T) live.Event {
	t.Helper()
	select {
	case ev := <-e.Events():
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
		return nil
	}
}

func (e *echo) endTurn(t *testing.T, line string) {
	t.Helper()
	if err := e.WriteLine([]byte(line)); err != nil {
		t.Fatal(err)
	}
}

func TestFrameHoldsMessagesWhileATurnRuns(t *testing.T) {
	e, err := startEcho(t, nil)
	if err != nil {
		t.Skipf("no cat: %v", err)
	}
	ctx := t.Context()
	if e.Interrupting() {
		t.Errorf("interrupting with no turn running")
	}
	for _, m := range []string{"one", "two", `"three" $HOME`} {
		if err := e.Send(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.started(t); strings.Join(got, "|") != "one" {
		t.Fatalf("first turn %q, want the first message alone", got)
	}
	if !e.Interrupting() {
		t.Errorf("not interrupting while a turn runs")
	}
	e.endTurn(t, "end")
	if ev := e.next(t); ev != (live.Text{Text: `["one"]`}) {
		t.Fatalf("event %#v", ev)
	}
	if ev := e.next(t); ev != (live.TurnDone{Stop: live.Interrupted}) {
		t.Fatalf("turn 1 ended with %#v, want interrupted", ev)
	}
	// The messages held during turn 1 start turn 2 together, byte-exact and in order.
	if got := e.started(t); strings.Join(got, "|") != `two|"three" $HOME` {
		t.Fatalf("second turn %q", got)
	}
	e.endTurn(t, "end")
	e.next(t)
	if ev := e.next(t); ev != (live.TurnDone{Stop: live.Completed}) {
		t.Fatalf("turn 2 ended with %#v: the interruption of turn 1 outlived it", ev)
	}
	// Idle (or about to be): a message starts a turn of its own.
	if err := e.Send(ctx, "four"); err != nil {
		t.Fatal(err)
	}
	if got := e.started(t); strings.Join(got, "|") != "four" {
		t.Fatalf("third turn %q", got)
	}
}

func TestFrameHeldMessagesThatFailToStart(t *testing.T) {
	e, err := startEcho(t, nil)
	if err != nil {
		t.Skipf("no cat: %v", err)
	}
	ctx := t.Context()
	if err := e.Send(ctx, "one"); err != nil {
		t.Fatal(err)
	}
	e.started(t)
	if err := e.Send(ctx, "lost"); err != nil {
		t.Fatal(err)
	}
	e.endTurn(t, "end-failing")
	e.next(t)
	e.next(t)
	if ev, ok := e.next(t).(live.Error); !ok || !strings.Contains(ev.Message, "not delivered: refused") {
		t.Fatalf("event %#v, want the held messages' failed start", ev)
	}
	// No turn runs: the next message starts one.
	if err := e.Send(ctx, "again"); err != nil {
		t.Fatal(err)
	}
	if got := e.started(t); strings.Join(got, "|") != "again" {
		t.Fatalf("turn %q", got)
	}
	if err := e.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := e.Send(ctx, "after the end"); !errors.Is(err, live.ErrClosed) {
		t.Errorf("send after close = %v, want ErrClosed", err)
	}
}

func TestFrameHandshakeFails(t *testing.T) {
	e, err := startEcho(t, func(context.Context, live.Options) error { return errors.New("no such protocol") })
	if err == nil {
		t.Fatal("start succeeded")
	}
	if !errors.Is(err, live.ErrHandshake) || !strings.Contains(err.Error(), "echo: ") ||
		!strings.Contains(err.Error(), "no such protocol") {
		t.Fatalf("err = %v", err)
	}
	if live.GroupAlive(e.PID()) {
		t.Errorf("the CLI still runs after its failed handshake")
	}
}

func TestFrameRequests(t *testing.T) {
	e, err := startEcho(t, nil)
	if err != nil {
		t.Skipf("no cat: %v", err)
	}
	answered := e.Ask("r1", "call-1", nil)
	if err := answered.Answer(func() error { e.Answered("r1"); return nil }); err != nil {
		t.Fatal(err)
	}
	e.Withdraw("r1") // resolved after its answer: no event
	taken := e.Ask("r2", "call-2", nil)
	e.Withdraw("r2") // the CLI took it back
	if ev := e.next(t); ev != (live.Withdrawn{ID: "call-2"}) {
		t.Fatalf("event %#v, want call-2 withdrawn", ev)
	}
	if err := taken.Answer(func() error { return nil }); !errors.Is(err, live.ErrWithdrawn) {
		t.Errorf("answer after withdrawal = %v", err)
	}
	var cancelled []string
	e.Ask("r3", "call-3", func() { cancelled = append(cancelled, "r3") })
	e.Ask("r4", "call-4", nil)
	for _, cancel := range e.WithdrawAll() {
		cancel()
	}
	got := []string{e.next(t).(live.Withdrawn).ID, e.next(t).(live.Withdrawn).ID}
	if !(got[0] == "call-3" && got[1] == "call-4" || got[0] == "call-4" && got[1] == "call-3") {
		t.Errorf("withdrawn %q, want call-3 and call-4", got)
	}
	if strings.Join(cancelled, ",") != "r3" {
		t.Errorf("cancelled %q, want r3", cancelled)
	}
	if len(e.WithdrawAll()) != 0 {
		t.Errorf("requests still open after WithdrawAll")
	}
}
