package live

import (
	"context"
	"fmt"
	"io"
	"time"
)

// Frame is what every adapter's conversation is built on: the CLI's process, the stream of its events, the
// gate that holds the messages sent while a turn runs, the CLI's requests waiting for an answer, and the
// conversation's life, a context that ends when it closes. An adapter embeds it and supplies only what is its
// CLI's (CLI); Events, PID, Send and Close of Conversation are the Frame's, SessionID and Interrupt the
// adapter's.
type Frame struct {
	cli      CLI
	proc     *Proc
	events   *Stream
	life     context.Context
	cancel   context.CancelFunc
	gate     gate
	requests requests
}

// CLI is what an adapter supplies to its Frame.
type CLI struct {
	// Name names the CLI in errors (claude, codex, gemini).
	Name string
	// Args select the CLI's protocol mode; they follow Options.Argv, the user's flags.
	Args []string
	// HandshakeTimeout bounds Handshake when Start's context has no deadline.
	HandshakeTimeout time.Duration
	// Read reads the CLI's output until it ends, emitting what it says; it runs on a goroutine of its own, the
	// Exit event after it.
	Read func(stdout io.Reader)
	// Handshake proves that the CLI speaks its protocol here (Read runs meanwhile).
	Handshake func(ctx context.Context, opts Options) error
	// StartTurn starts a turn of texts, the user messages in order, and returns once the CLI has taken them, not
	// when the turn ends. It gets one text from Send, or every message held while the last turn ran: the adapter
	// makes them one turn (claude, codex) or a turn each, one after another (gemini), and calls EndTurn once
	// they are done. ctx is Send's, or the conversation's life for the held messages.
	StartTurn func(ctx context.Context, texts []string) error
}

// Start starts the CLI (Options.Argv, then cli.Args), reads its output with cli.Read and runs cli.Handshake
// within ctx, or within cli.HandshakeTimeout when ctx has no deadline; ctx bounds the handshake, not the process
// (Close ends it). A handshake that fails ends the process and is an ErrHandshake naming the CLI, with the end of
// its stderr: the CLI runs but does not speak its protocol here.
func (f *Frame) Start(ctx context.Context, opts Options, cli CLI) error {
	proc, err := StartProc(opts, cli.Args...)
	if err != nil {
		return err
	}
	f.cli, f.proc, f.events = cli, proc, NewStream()
	f.life, f.cancel = context.WithCancel(context.WithoutCancel(ctx))
	go f.read()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cli.HandshakeTimeout)
		defer cancel()
	}
	if err := cli.Handshake(ctx, opts); err != nil {
		_ = f.Close()
		return fmt.Errorf("%s: %w: %w (stderr: %s)", cli.Name, ErrHandshake, err, proc.StderrTail(5))
	}
	return nil
}

func (f *Frame) read() {
	f.cli.Read(f.proc.Stdout())
	err := f.proc.Wait()
	if err != nil {
		err = fmt.Errorf("%s: %w", f.cli.Name, err)
	}
	f.events.Emit(Exit{Err: err, Stderr: f.proc.Stderr()})
	f.events.End()
}

// Events implements Conversation.
func (f *Frame) Events() <-chan Event { return f.events.Events() }

// PID implements Conversation.
func (f *Frame) PID() int { return f.proc.PID() }

// Close implements Conversation: the CLI ends its conversation and exits when its stdin closes.
func (f *Frame) Close() error {
	f.cancel()
	err := f.proc.Stop()
	f.events.Abandon()
	return err
}

// Send implements Conversation: the text starts a turn, or waits for the running one to end (see the gate).
func (f *Frame) Send(ctx context.Context, text string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case <-f.proc.Exited():
		return fmt.Errorf("%s: %w", f.cli.Name, ErrClosed)
	default:
	}
	if !f.gate.enter(text) {
		return nil
	}
	if err := f.cli.StartTurn(ctx, []string{text}); err != nil {
		f.gate.failed()
		return err
	}
	return nil
}

// Interrupting marks the running turn as interrupted by ace, for EndTurn (where the CLI's turn end does not say
// so itself); false when no turn runs, and there is nothing to interrupt.
func (f *Frame) Interrupting() bool { return f.gate.interrupting() }

// EndTurn is the adapter seeing the turn StartTurn started end: done (nil for none) emits what ends it, told
// whether Interrupting was called during the turn; then the messages held meanwhile start the next turn, on a
// goroutine of their own, because EndTurn is called by the goroutine that reads the CLI's output and that must
// go on reading (a JSON-RPC call's response comes that way). A start that fails is an Error event, unless the
// conversation is closing.
func (f *Frame) EndTurn(done func(interrupted bool)) {
	interrupted := f.gate.end()
	if done != nil {
		done(interrupted)
	}
	held := f.gate.next()
	if held == nil {
		return
	}
	go func() {
		err := f.cli.StartTurn(f.life, held)
		if err == nil {
			return
		}
		f.gate.failed()
		if f.life.Err() == nil {
			f.events.Emit(Error{Message: "the messages sent during the turn were not delivered: " + err.Error()})
		}
	}()
}

// Emit adds e to the conversation's events (for the adapter).
func (f *Frame) Emit(e Event) { f.events.Emit(e) }

// WriteLine writes b and a newline to the CLI's stdin (for the adapter).
func (f *Frame) WriteLine(b []byte) error { return f.proc.WriteLine(b) }

// Exited is closed when the CLI has exited (for the adapter).
func (f *Frame) Exited() <-chan struct{} { return f.proc.Exited() }

// Life ends when the conversation closes (for the adapter: the calls it makes of its own, outside any caller's).
func (f *Frame) Life() context.Context { return f.life }
