package livehost

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/testkit"
	"github.com/aceworks/ace/pkg/live"
	"github.com/aceworks/ace/pkg/tmuxops"
)

// The test binary is also the programs the tmux tests' panes run: the env-file launcher and the live host.
func TestMain(m *testing.M) {
	os.Exit(testkit.Main(m, nil, testkit.Commands(map[string]func([]string) int{
		ChildArg:   func(args []string) int { return mainWith(args, withFake) },
		"__launch": tmuxops.LaunchMain,
	})))
}

// withFake finds the built-in agents' live adapters, and "fake": the test's fake conversations.
func withFake(name string) (agent, bool) {
	if name == "fake" {
		return agent{start: startFake, midTurn: live.OneTurn}, true
	}
	return agentNamed(name)
}

// fakes are the fake conversations of the running tests by working directory (each test has its own), or the
// error their start fails with.
var fakes sync.Map

func startFake(ctx context.Context, opts live.Options) (live.Conversation, error) {
	v, _ := fakes.Load(opts.Dir)
	if err, ok := v.(error); ok {
		return nil, err
	}
	f := v.(*fakeConv)
	f.resume = opts.Resume
	return f, nil
}

// fakeConv is a conversation the test plays: what the host sends it arrives on sent, the events it emits are
// the test's.
type fakeConv struct {
	*live.Stream
	sent       chan string
	interrupts atomic.Int32
	closed     atomic.Bool
	resume     string
}

func (f *fakeConv) Send(ctx context.Context, text string) error { f.sent <- text; return nil }
func (f *fakeConv) SessionID() string                           { return "fake-session" }
func (f *fakeConv) PID() int                                    { return 0 }
func (f *fakeConv) Interrupt(ctx context.Context) error {
	f.interrupts.Add(1)
	return nil
}
func (f *fakeConv) Close() error {
	f.closed.Store(true)
	f.Abandon()
	return nil
}

// fakeHost is one host running a fake conversation, its terminal a pipe and its pane a buffer.
type fakeHost struct {
	t      *testing.T
	spec   Spec
	conv   *fakeConv
	client *Client
	typing *io.PipeWriter
	pane   *testkit.Buffer
	stop   context.CancelCauseFunc
	code   chan int
}

// startFakeHost runs a host (run, as Main does after the spec) on a fake conversation, or on a start that fails
// with startErr, and waits for its socket to answer.
func startFakeHost(t *testing.T, autoApprove bool, startErr error) *fakeHost {
	t.Helper()
	dir := t.TempDir()
	spec := Spec{Agent: "fake", Argv: []string{"fake"}, Dir: dir, AutoApprove: autoApprove,
		Transcript: filepath.Join(dir, "run", "transcript.jsonl"), Socket: filepath.Join(dir, "run", "host.sock")}
	fh := &fakeHost{t: t, spec: spec, client: Dial(spec.Socket), pane: &testkit.Buffer{}, code: make(chan int, 1),
		conv: &fakeConv{Stream: live.NewStream(), sent: make(chan string, 10)}}
	if startErr != nil {
		fakes.Store(dir, startErr)
	} else {
		fakes.Store(dir, fh.conv)
	}
	t.Cleanup(func() { fakes.Delete(dir) })
	var in *io.PipeReader
	in, fh.typing = io.Pipe()
	ctx, stop := context.WithCancelCause(context.Background())
	fh.stop = stop
	go func() {
		fh.code <- run(ctx, spec, agent{start: startFake, midTurn: live.OneTurn}, in, fh.pane, false, nil)
	}()
	t.Cleanup(func() {
		stop(context.Canceled)
		_ = fh.typing.Close()
	})
	if startErr == nil {
		fh.waitStatus("the host answers", func(Status) bool { return true })
	}
	return fh
}

func (fh *fakeHost) waitStatus(what string, cond func(Status) bool) Status {
	fh.t.Helper()
	return waitStatus(fh.t, fh.client, what, 10*time.Second, cond)
}

// waitStatus waits at most d until the status c's host answers satisfies cond, and returns it.
func waitStatus(t *testing.T, c *Client, what string, d time.Duration, cond func(Status) bool) Status {
	t.Helper()
	var s Status
	testkit.WaitFor(t, what, d, func() bool {
		var err error
		s, err = c.Status(t.Context())
		return err == nil && cond(s)
	})
	return s
}

// records waits until the transcript holds a record of kind matching cond, and returns the transcript.
func (fh *fakeHost) records(what string, cond func(Record) bool) []Record {
	fh.t.Helper()
	var recs []Record
	testkit.WaitFor(fh.t, what, 10*time.Second, func() bool {
		recs, _ = ReadTranscript(fh.spec.Transcript, 0)
		for _, r := range recs {
			if cond(r) {
				return true
			}
		}
		return false
	})
	return recs
}

// sent waits for the next message the host delivered to the conversation.
func (fh *fakeHost) sent() string {
	fh.t.Helper()
	select {
	case s := <-fh.conv.sent:
		return s
	case <-time.After(10 * time.Second):
		fh.t.Fatal("no message reached the conversation")
		return ""
	}
}

func (fh *fakeHost) typeLine(line string) {
	fh.t.Helper()
	if _, err := io.WriteString(fh.typing, line+"\n"); err != nil {
		fh.t.Fatal(err)
	}
}

// exit waits for run to return and gives its exit code.
func (fh *fakeHost) exit() int {
	fh.t.Helper()
	select {
	case c := <-fh.code:
		return c
	case <-time.After(10 * time.Second):
		fh.t.Fatal("the host did not exit")
		return -1
	}
}
