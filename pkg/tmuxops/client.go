// Package tmuxops drives tmux on a dedicated socket (`tmux -L <socket>`): agent sessions started without a
// shell and without secrets on any command line, prompt delivery by bracketed paste with verified submission,
// cheap screen reading, transcripts, and killing a session together with every process it started.
package tmuxops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Client runs tmux commands against one socket.
type Client struct {
	socket  string
	tmux    string
	timeout time.Duration
	command func(ctx context.Context, name string, args ...string) *exec.Cmd
	ctl     controlState
	// recovered is told what the client ended of dead aces' (WithRecovered); recoverMu makes one recovery at a
	// time.
	recovered func(Recovery)
	recoverMu sync.Mutex
}

// Option configures a Client.
type Option func(*Client)

// WithTmuxPath runs tmux from path.
func WithTmuxPath(path string) Option { return func(c *Client) { c.tmux = path } }

// WithTimeout bounds every tmux call (default 10 s).
func WithTimeout(d time.Duration) Option { return func(c *Client) { c.timeout = d } }

// WithExec replaces how commands are made (a seam for fault tests).
func WithExec(f func(ctx context.Context, name string, args ...string) *exec.Cmd) Option {
	return func(c *Client) { c.command = f }
}

// New returns a client for socket (tmux -L socket).
func New(socket string, opts ...Option) *Client {
	c := &Client{socket: socket, tmux: "tmux", timeout: 10 * time.Second, command: exec.CommandContext}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Socket is the tmux socket name.
func (c *Client) Socket() string { return c.socket }

// Error is a failed tmux command.
type Error struct {
	Args     []string
	ExitCode int
	Stderr   string
}

func (e *Error) Error() string {
	return fmt.Sprintf("tmux %s: exit status %d: %s", strings.Join(e.Args, " "), e.ExitCode, strings.TrimSpace(e.Stderr))
}

// noServer reports whether err says the tmux server is not running (nothing to list, nothing to find).
func noServer(err error) bool {
	var te *Error
	if !errors.As(err, &te) {
		return false
	}
	s := te.Stderr
	// A server that is shutting down answers "server exited unexpectedly" or "no current target": it is gone.
	return strings.Contains(s, "no server running") || strings.Contains(s, "error connecting") ||
		strings.Contains(s, "No such file or directory") || strings.Contains(s, "server exited unexpectedly") ||
		strings.Contains(s, "no current target")
}

// Gone reports whether err says the session a command was for is not there, or no server is: a session that was
// listed a moment ago and has gone since (its server killed, or crashed) is an agent gone, not a failed command.
func Gone(err error) bool {
	var te *Error
	return noServer(err) || (errors.As(err, &te) && strings.Contains(te.Stderr, "can't find session"))
}

// run executes tmux with args (and stdin when given) and returns stdout. A server that refuses the client is
// given time to finish exiting, or ended when a dead ace left it unusable (recoverServer), and the command is
// run again once: the next command finds a fresh server, or none.
func (c *Client) run(ctx context.Context, stdin []byte, args ...string) (string, error) {
	out, err := c.runOnce(ctx, stdin, args...)
	if !serverRefuses(err) {
		return out, err
	}
	rec, rerr := c.recoverServer(ctx)
	c.report(rec)
	if rerr != nil {
		return "", errors.Join(err, fmt.Errorf("recover the tmux server: %w", rerr))
	}
	return c.runOnce(ctx, stdin, args...)
}

// runOnce is run without the recovery.
func (c *Client) runOnce(ctx context.Context, stdin []byte, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	full := append([]string{"-L", c.socket, "-f", "/dev/null"}, args...)
	cmd := c.command(ctx, c.tmux, full...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	err := cmd.Run()
	if err != nil {
		code := -1
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if ctx.Err() != nil {
			return "", fmt.Errorf("tmux %s: %w", strings.Join(args, " "), ctx.Err())
		} else {
			return "", fmt.Errorf("tmux: %w (is tmux installed? apt-get install tmux)", err)
		}
		return "", &Error{Args: args, ExitCode: code, Stderr: stderr.String()}
	}
	return stdout.String(), nil
}

// target is an exact-match session target: "=ace-x-1" never matches ace-x-12.
func target(name string) string { return "=" + name }

// paneTarget is the active pane of the session named exactly name.
func paneTarget(name string) string { return "=" + name + ":" }
