package tmuxops

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aceworks/ace/pkg/procs"
)

// ControlPrefix starts the names of the hidden sessions that hold ace's control-mode connections; they are not
// agent sessions and Panes leaves them out.
const ControlPrefix = "_ace-ctl-"

// control is one persistent control-mode client (`tmux -C`). A monitor that lists panes every second through
// it spawns no process per tick: a tmux client start costs more CPU than everything the server does for the
// command. Commands are answered in order in %begin/%end blocks, so one at a time under a mutex suffices.
type control struct {
	mu     sync.Mutex
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.Closer
	out    *bufio.Reader
	broken bool
	exited <-chan struct{} // closed once the client has exited and been reaped
}

// errControlDown says the connection is gone; the caller falls back to running tmux as a process.
var errControlDown = errors.New("tmux control connection is down")

// dialControl starts a control client on a hidden session of its own. The client dies with this process
// (startTied): a client whose ace died while tmux still had output for it never exits by itself (tmux 3.3a waits
// for a control client's output to drain before it lets it go, and a dead reader drains nothing), and a server
// told to exit then waits for it forever, refusing every new client with "server exited unexpectedly".
func (c *Client) dialControl(ctx context.Context) (*control, error) {
	// What dead aces left attached goes first: the session reaping below must not end a session whose client
	// is still there (see reapControlSessions).
	c.report(Recovery{Socket: c.socket, Clients: c.reapOrphanClients()})
	name := ControlPrefix + strconv.Itoa(os.Getpid())
	args := []string{"-L", c.socket, "-f", "/dev/null", "-C", "new-session", "-A", "-s", name, "-x", "20", "-y", "5", "cat"}
	// Not CommandContext: the connection outlives the call that opened it; close ends it.
	cmd := exec.Command(c.tmux, args...)
	// Inside a tmux pane $TMUX makes tmux refuse to attach ("sessions should be nested with care").
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "TMUX=") })
	// Pipes of our own rather than cmd's: the client is reaped by the goroutine that started it (startTied),
	// which must not close them under a read.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	exited, err := startTied(cmd)
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("start tmux control client: %w", err)
	}
	ct := &control{cmd: cmd, stdin: inW, stdout: outR, out: bufio.NewReaderSize(outR, 64<<10), exited: exited}
	// Commands sent before the client is attached are run before its session exists.
	if err := ct.awaitAttach(ctx, name); err != nil {
		ct.close()
		return nil, err
	}
	// The first command proves the connection works. The session is ended by close (kill-session), or — when
	// ace died without closing — by the next ace's dial (reapControlSessions). Not by destroy-unattached: tmux
	// 3.3a segfaults when it destroys an unattached session whose control client is still exiting (seen when
	// ace was SIGKILLed and any tmux command followed), and the crash takes every agent's session with it.
	// remain-on-exit (global, for agents) must not keep this session once its `cat` is gone.
	if _, err := ct.exec(ctx, []string{"set-option", "-w", "remain-on-exit", "off"}); err != nil {
		ct.close()
		return nil, err
	}
	ended, err := reapControlSessions(ctx, ct.exec)
	c.report(Recovery{Socket: c.socket, Sessions: ended})
	if err != nil {
		ct.close()
		return nil, err
	}
	return ct, nil
}

// startTied starts cmd so that the kernel kills it when this process dies (tieToParent), from a thread of its own
// that reaps it (procs.StartOnOwnThread): Linux sends that signal when the thread that forked the child ends, not
// the process. The channel is closed once the child has exited.
func startTied(cmd *exec.Cmd) (<-chan struct{}, error) {
	tieToParent(cmd)
	return procs.StartOnOwnThread(cmd)
}

// exec runs one tmux command over the connection and returns its output.
func (ct *control) exec(ctx context.Context, args []string) (string, error) {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	return ct.execLocked(ctx, args)
}

func (ct *control) execLocked(ctx context.Context, args []string) (string, error) {
	line, ok := controlLine(args)
	if !ok {
		return "", fmt.Errorf("argument not expressible over control mode: %w", errControlDown)
	}
	if ct.broken {
		return "", errControlDown
	}
	// A stuck server must not hang the monitor: a deadline breaks the connection for good.
	stop := context.AfterFunc(ctx, ct.abort)
	defer stop()
	if _, err := io.WriteString(ct.stdin, line+"\n"); err != nil {
		ct.broken = true
		return "", fmt.Errorf("%w: %v", errControlDown, err)
	}
	out, failed, err := ct.readBlock()
	if err != nil {
		ct.broken = true
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", fmt.Errorf("%w: %v", errControlDown, err)
	}
	if failed {
		return "", &Error{Args: args, ExitCode: 1, Stderr: out}
	}
	return out, nil
}

// awaitAttach reads up to the notification that the client is attached to its session.
func (ct *control) awaitAttach(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	stop := context.AfterFunc(ctx, ct.abort)
	defer stop()
	for {
		l, err := ct.out.ReadString('\n')
		if err != nil {
			return fmt.Errorf("attach tmux control client: %w", err)
		}
		if f := strings.Fields(l); len(f) == 3 && f[0] == "%session-changed" && f[2] == name {
			return nil
		}
	}
}

// readBlock skips notifications up to the next block sent for a command of ours (flags 1) and returns its body.
func (ct *control) readBlock() (body string, failed bool, err error) {
	var begin string
	var lines []string
	for {
		l, err := ct.out.ReadString('\n')
		if err != nil {
			return "", false, err
		}
		l = strings.TrimSuffix(l, "\n")
		if begin == "" {
			if strings.HasPrefix(l, "%begin ") {
				begin = strings.TrimPrefix(l, "%begin ")
			}
			if l == "%exit" || strings.HasPrefix(l, "%exit ") {
				return "", false, io.EOF
			}
			continue
		}
		// The end marker repeats the begin's time, number and flags, which output cannot know in advance.
		if l == "%end "+begin || l == "%error "+begin {
			if !strings.HasSuffix(begin, " 1") {
				begin, lines = "", lines[:0]
				continue
			}
			return strings.Join(lines, "\n") + "\n", strings.HasPrefix(l, "%error"), nil
		}
		lines = append(lines, l)
	}
}

// controlLine quotes args for tmux's command parser; arguments it cannot carry safely make it refuse.
func controlLine(args []string) (string, bool) {
	q := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, "'\n\r") {
			return "", false
		}
		q[i] = "'" + a + "'"
	}
	return strings.Join(q, " "), true
}

func (ct *control) kill() {
	if ct.cmd.Process != nil {
		_ = ct.cmd.Process.Kill()
	}
}

// abort ends the client and any read under way: the server holds a copy of the client's output pipe until it
// has noticed the client gone, which a stuck server never does.
func (ct *control) abort() {
	ct.kill()
	_ = ct.stdout.Close()
}

// reapControlSessions ends the control sessions of processes that died without closing theirs, through run
// (the connection's exec, or a tmux process), and names them. Their clients must be gone first
// (reapOrphanClients): a session ended under a control client that cannot exit leaves that client for good.
func reapControlSessions(ctx context.Context, run func(context.Context, []string) (string, error)) ([]string, error) {
	out, err := run(ctx, []string{"list-sessions", "-F", "#{session_name}"})
	if err != nil {
		return nil, err
	}
	var ended []string
	for _, name := range deadControlSessions(out) {
		if _, err := run(ctx, []string{"kill-session", "-t", "=" + name}); err != nil {
			return ended, fmt.Errorf("end the control session %s of a dead process: %w", name, err)
		}
		ended = append(ended, name)
	}
	return ended, nil
}

// deadControlSessions are the control sessions in a list of session names whose process is gone.
func deadControlSessions(list string) []string {
	var out []string
	for _, name := range strings.Fields(list) {
		pid, err := strconv.Atoi(strings.TrimPrefix(name, ControlPrefix))
		if !strings.HasPrefix(name, ControlPrefix) || err != nil || procs.Alive(pid) {
			continue
		}
		out = append(out, name)
	}
	return out
}

// close ends the connection's session (which ends the client) and waits for the client to exit.
func (ct *control) close() {
	ct.mu.Lock()
	if !ct.broken {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		// The reply is %exit rather than a block: the client goes with its session.
		_, _ = ct.execLocked(ctx, []string{"kill-session"})
		cancel()
		ct.broken = true
	}
	ct.mu.Unlock()
	_ = ct.stdin.Close()
	select {
	case <-ct.exited:
	case <-time.After(2 * time.Second):
		ct.kill()
		<-ct.exited
	}
	_ = ct.stdout.Close()
}

// controlState is the Client's optional control connection (see WithControl).
type controlState struct {
	mu      sync.Mutex
	enabled bool
	conn    *control
	// live says the last pane listing found a running server: a connection is only opened to a server that
	// exists, because opening one to none would start a server just to watch nothing.
	live bool
}

// WithControl makes Panes and Capture go through one persistent control-mode client instead of a tmux process
// per call — for long-running monitors. Close the Client to end it.
func WithControl() Option { return func(c *Client) { c.ctl.enabled = true } }

// query runs a read-only command over the control connection when there is one, else as a process.
func (c *Client) query(ctx context.Context, args ...string) (string, error) {
	if ct := c.controlConn(ctx); ct != nil {
		cctx, cancel := context.WithTimeout(ctx, c.timeout)
		out, err := ct.exec(cctx, args)
		cancel()
		if err == nil || (!errors.Is(err, errControlDown) && !ct.isBroken()) {
			return out, err
		}
		c.dropControl(ct)
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
	}
	return c.run(ctx, nil, args...)
}

func (c *Client) controlConn(ctx context.Context) *control {
	s := &c.ctl
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.enabled || !s.live {
		return nil
	}
	if s.conn == nil {
		ct, err := c.dialControl(ctx)
		if err != nil {
			s.live = false
			return nil
		}
		s.conn = ct
	}
	return s.conn
}

// serverSeen records whether the last listing found a server, so a connection is (re)opened only to one.
// With no agent session left the connection is closed, letting an otherwise empty server exit.
func (c *Client) serverSeen(live bool) {
	c.ctl.mu.Lock()
	c.ctl.live = live
	ct := c.ctl.conn
	if !live {
		c.ctl.conn = nil
	}
	c.ctl.mu.Unlock()
	if !live && ct != nil {
		ct.close()
	}
}

func (c *Client) dropControl(ct *control) {
	s := &c.ctl
	s.mu.Lock()
	if s.conn == ct {
		s.conn = nil
		s.live = false
	}
	s.mu.Unlock()
	ct.close()
}

func (ct *control) isBroken() bool {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	return ct.broken
}

// Close ends the control connection, if any; the Client stays usable without it.
func (c *Client) Close() error {
	c.ctl.mu.Lock()
	ct := c.ctl.conn
	c.ctl.conn, c.ctl.live = nil, false
	c.ctl.enabled = false
	c.ctl.mu.Unlock()
	if ct != nil {
		ct.close()
	}
	return nil
}
