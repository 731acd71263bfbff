package livehost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/mattn/go-isatty"

	"github.com/aceworks/ace/pkg/live"
	"github.com/aceworks/ace/pkg/secrets"
)

// Main runs the live host: `ace __live SPECFILE` in the run's tmux pane, stdout and stdin the pane's terminal.
// It returns 0 once stopped by SIGTERM or SIGHUP (the conversation closed), 1 when the CLI exited by itself or
// did not start, ExitHandshake when it does not speak its protocol, ExitUsage when nothing could be started.
// Ctrl-C in the pane (SIGINT) interrupts the running turn, as it does in the CLIs' own terminal UIs.
func Main(args []string) int { return mainWith(args, agentNamed) }

// mainWith is Main with the agents it knows found by find (the tests add a fake one).
func mainWith(args []string, find func(name string) (agent, bool)) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: ace "+ChildArg+" SPECFILE")
		return ExitUsage
	}
	spec, err := ReadSpec(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "ace:", err)
		return ExitUsage
	}
	a, ok := find(spec.Agent)
	if !ok {
		fmt.Fprintf(os.Stderr, "ace: live spec %s: agent %q has no live mode (claude, codex and gemini have)\n", args[0], spec.Agent)
		return ExitUsage
	}
	ctx, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	stopping := make(chan os.Signal, 1)
	signal.Notify(stopping, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		sig := <-stopping
		stop(fmt.Errorf("stopped by %v", sig))
	}()
	interrupts := make(chan os.Signal, 1)
	signal.Notify(interrupts, os.Interrupt)
	_, noColor := os.LookupEnv("NO_COLOR")
	color := !noColor && isatty.IsTerminal(os.Stdout.Fd())
	return run(ctx, spec, a, os.Stdin, os.Stdout, color, interrupts)
}

// run is Main once the spec is read; ctx ends when the host is to stop (its cause says why).
func run(ctx context.Context, spec Spec, a agent, in io.Reader, out io.Writer, color bool, interrupts <-chan os.Signal) int {
	redact := secrets.NewMaskingRedactor("[redacted]")
	for _, name := range spec.SecretNames {
		redact.Add(os.Getenv(name))
	}
	j, err := openJournal(spec.Transcript, out, color, redact)
	if err != nil {
		fmt.Fprintln(out, "ace:", err)
		return ExitUsage
	}
	defer j.close()
	ln, err := listen(spec.Socket)
	if err != nil {
		fmt.Fprintln(out, "ace:", err)
		return ExitUsage
	}
	defer ln.Close() // removes the socket
	h := newHost(j, a, spec.AutoApprove)
	go h.serve(ctx, ln)
	j.say(fmt.Sprintf("ace: starting %s in %s — type a message and press Enter to send it; Ctrl-C interrupts a turn", spec.Agent, spec.Dir))
	conv, err := a.start(ctx, live.Options{Argv: spec.Argv, Env: os.Environ(), Dir: spec.Dir, Resume: spec.Resume})
	h.started(conv, err)
	switch {
	case err != nil && ctx.Err() != nil:
		j.add(Record{Kind: KindExit, Text: context.Cause(ctx).Error() + " before the agent started"})
		return 0
	case errors.Is(err, live.ErrHandshake):
		j.add(Record{Kind: KindHandshakeFailed, Text: err.Error()})
		return ExitHandshake
	case err != nil:
		j.add(Record{Kind: KindExit, Code: -1, Text: err.Error()})
		return 1
	}
	go h.readTerminal(ctx, in)
	go func() {
		for range interrupts {
			j.say("ace: interrupting the turn")
			_ = h.interrupt(ctx)
		}
	}()
	if h.run(ctx) {
		_ = conv.Close() // the process is gone; its pipes are not
		return 1
	}
	err = conv.Close()
	j.add(Record{Kind: KindExit, Code: exitCode(err), Text: context.Cause(ctx).Error()})
	return 0
}
