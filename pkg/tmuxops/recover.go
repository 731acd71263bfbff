package tmuxops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aceworks/ace/pkg/procs"
)

// What a dead ace can leave on its tmux server, and how the next one finds and ends it. An ace killed while tmux
// had output for its control client left that client attached for good (before clients were tied to their ace:
// startTied); `tmux kill-server` then half-exits the server: its sessions are gone, it waits for the client to
// drain, and it refuses every new client ("server exited unexpectedly"), so no agent can start on the socket.

// Orphan is a control client whose ace is gone.
type Orphan struct {
	PID   int // the tmux client process
	Owner int // the ace that started it (its session is _ace-ctl-<Owner>)
}

// Recovery is what a Client found left by dead aces on its server and ended.
type Recovery struct {
	Socket   string
	Clients  []Orphan // control clients of dead aces
	Sessions []string // control sessions of dead aces
	// Unusable says the server refused every client, held half-exited by a dead ace's control client (or by
	// nothing that would ever end): it is gone now, and the next session starts a fresh one. Server is its PID;
	// Killed says it had to be killed (it did not exit once the clients were ended).
	Unusable bool
	Server   int
	Killed   bool
}

// Empty reports whether nothing was found.
func (r Recovery) Empty() bool { return len(r.Clients) == 0 && len(r.Sessions) == 0 && !r.Unusable }

func (r Recovery) String() string {
	var parts []string
	if r.Unusable {
		how := "it exited once they were gone"
		if r.Killed {
			how = "killed it"
		}
		parts = append(parts, fmt.Sprintf("the tmux server on socket %s (pid %d) refused every client, half-exited (a kill-server waiting for the control clients of dead aces): %s; the next session starts a fresh server",
			r.Socket, r.Server, how))
	}
	if len(r.Clients) > 0 {
		var cs []string
		for _, o := range r.Clients {
			cs = append(cs, fmt.Sprintf("%d (of ace %d)", o.PID, o.Owner))
		}
		parts = append(parts, "ended the tmux control clients of dead ace processes: "+strings.Join(cs, ", "))
	}
	if len(r.Sessions) > 0 {
		parts = append(parts, "ended their control sessions: "+strings.Join(r.Sessions, ", "))
	}
	return strings.Join(parts, "; ")
}

// WithRecovered has f told of every Recovery the client makes that found something: on its own (a command met a
// server left unusable, a control connection opened) or through Recover.
func WithRecovered(f func(Recovery)) Option { return func(c *Client) { c.recovered = f } }

func (c *Client) report(r Recovery) {
	if !r.Empty() && c.recovered != nil {
		c.recovered(r)
	}
}

// Recover ends what dead ace processes left on the server — their control clients, their control sessions, and
// a server they left unusable — and says what it ended. ace does this before it uses the server; a command that
// meets an unusable server does it by itself.
func (c *Client) Recover(ctx context.Context) (Recovery, error) {
	rec, err := c.recoverServer(ctx)
	c.report(rec)
	return rec, err
}

// recoverServer is Recover without the report. A server that refuses clients while dead aces' clients hold it
// exits once they are gone; one that refuses for unusableFor with none is killed; its sessions went with its
// kill-server. One that refuses a moment and is gone without either was only exiting (its last session ended):
// nothing to tell.
func (c *Client) recoverServer(ctx context.Context) (Recovery, error) {
	c.recoverMu.Lock()
	defer c.recoverMu.Unlock()
	rec := Recovery{Socket: c.socket}
	_, err := c.runOnce(ctx, nil, "display-message", "-p", "#{pid}")
	var server []int
	if serverRefuses(err) {
		server = c.serverPIDs()
	}
	rec.Clients = c.reapOrphanClients()
	if len(server) > 0 {
		rec.Server = server[0]
		killed, err := c.mendServer(ctx)
		rec.Unusable, rec.Killed = len(rec.Clients) > 0 || killed != 0, killed != 0
		if killed != 0 {
			rec.Server = killed
		}
		return rec, err
	}
	if err != nil {
		return rec, nil // no server, or no tmux to ask: nothing of theirs is left on it
	}
	run := func(ctx context.Context, args []string) (string, error) { return c.runOnce(ctx, nil, args...) }
	ended, err := reapControlSessions(ctx, run)
	rec.Sessions = ended
	if noServer(err) {
		err = nil
	}
	return rec, err
}

// Leftovers lists, ending nothing, what Recover would end: the control clients of dead aces, their control
// sessions, and the PID of a server left unusable.
func (c *Client) Leftovers(ctx context.Context) (Recovery, error) {
	rec := Recovery{Socket: c.socket, Clients: c.orphanClients()}
	if c.unusable(ctx) {
		rec.Unusable = true
		if ls := c.serverPIDs(); len(ls) > 0 {
			rec.Server = ls[0]
		}
		return rec, nil
	}
	out, err := c.runOnce(ctx, nil, "list-sessions", "-F", "#{session_name}")
	if err != nil {
		if noServer(err) {
			return rec, nil
		}
		return rec, err
	}
	rec.Sessions = deadControlSessions(out)
	return rec, nil
}

// orphanClients finds this socket's control clients whose ace is gone: this user's tmux clients started as
// dialControl starts them, whose parent is no longer the ace their session is named after.
func (c *Client) orphanClients() []Orphan {
	var out []Orphan
	for _, p := range procs.All() {
		owner, ok := c.controlOwner(procs.Cmdline(p))
		// A server started by a control client has its command line: it names itself a server.
		if !ok || procs.Comm(p) == "tmux: server" || !procs.Mine(p) {
			continue
		}
		st, err := procs.Read(p)
		if err != nil || st.State == 'Z' || st.State == 'X' || (st.PPID == owner && procs.Alive(owner)) {
			continue
		}
		out = append(out, Orphan{PID: p, Owner: owner})
	}
	if len(out) == 0 {
		return nil
	}
	// Where tmux names no process (a build without setproctitle), the server is the socket's listener.
	server := c.serverPIDs()
	return slices.DeleteFunc(out, func(o Orphan) bool { return slices.Contains(server, o.PID) })
}

// reapOrphanClients ends the control clients of dead aces (SIGKILL: the client only relays; its server sees it
// gone and lets go of it), waits for them to go and returns those it ended.
func (c *Client) reapOrphanClients() []Orphan {
	var ended []Orphan
	for _, o := range c.orphanClients() {
		if syscall.Kill(o.PID, syscall.SIGKILL) == nil {
			ended = append(ended, o)
		}
	}
	deadline := time.Now().Add(killGrace)
	for _, o := range ended {
		for procs.Alive(o.PID) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	return ended
}

// controlOwner reads argv as a control client of this socket's (dialControl's command line) and returns the PID
// its session is named after.
func (c *Client) controlOwner(argv []string) (int, bool) {
	if len(argv) < 2 || !strings.HasPrefix(filepath.Base(argv[0]), "tmux") {
		return 0, false
	}
	socket, control, name := "", false, ""
	for i, a := range argv {
		switch {
		case a == "-L" && i+1 < len(argv):
			socket = argv[i+1]
		case a == "-C":
			control = true
		case a == "-s" && i+1 < len(argv):
			name = argv[i+1]
		}
	}
	pid, err := strconv.Atoi(strings.TrimPrefix(name, ControlPrefix))
	if socket != c.socket || !control || !strings.HasPrefix(name, ControlPrefix) || err != nil || pid <= 0 {
		return 0, false
	}
	return pid, true
}

// serverPIDs are the processes listening on the socket: its server.
func (c *Client) serverPIDs() []int { return procs.Listeners(c.defaultSocketPath()) }

// unusableFor is how long a server that refuses clients while it still listens is given to finish exiting
// before it is taken for one a dead ace left half-exited.
const unusableFor = 2 * time.Second

// unusable reports whether the server listens on its socket but refuses every client.
func (c *Client) unusable(ctx context.Context) bool {
	_, err := c.runOnce(ctx, nil, "display-message", "-p", "#{pid}")
	return serverRefuses(err) && len(c.serverPIDs()) > 0
}

// mendServer waits for a server that refuses clients to finish exiting and kills it (by PID) when it does not:
// its sessions are gone already, and nothing else would ever end it. It returns the killed server's PID.
func (c *Client) mendServer(ctx context.Context) (int, error) {
	deadline := time.Now().Add(unusableFor)
	for {
		_, err := c.runOnce(ctx, nil, "display-message", "-p", "#{pid}")
		if !serverRefuses(err) {
			return 0, nil // it answers, or it is gone
		}
		pids := c.serverPIDs()
		if len(pids) == 0 {
			return 0, nil // it has just exited
		}
		if time.Now().After(deadline) {
			for _, p := range pids {
				_ = syscall.Kill(p, syscall.SIGKILL)
			}
			if err := os.Remove(c.defaultSocketPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
				return pids[0], fmt.Errorf("remove the socket of the unusable tmux server: %w", err)
			}
			return pids[0], nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// serverRefuses reports whether err says the server closed the connection without answering: it is exiting, or
// was left half-exited.
func serverRefuses(err error) bool {
	var te *Error
	return errors.As(err, &te) && strings.Contains(te.Stderr, "server exited unexpectedly")
}
