package tmuxops

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aceworks/ace/pkg/procs"
)

// killGrace is how long processes get between SIGTERM and SIGKILL.
const killGrace = 2 * time.Second

// Kill ends the session and every process it started: the pane's process, its process group and all its
// descendants (agents leave daemons behind), by PID — SIGTERM, then SIGKILL after a grace period.
func (c *Client) Kill(ctx context.Context, name string) error {
	out, err := c.run(ctx, nil, "list-panes", "-t", target(name), "-F", "#{pane_pid}"+fieldSep+"#{pane_dead}"+fieldSep+"#{pid}")
	if err != nil {
		if ok, herr := c.HasSession(ctx, name); herr == nil && !ok {
			return nil
		}
		return err
	}
	killTree(procs.Snapshot(), paneRoots(out, procs.Read))
	if _, err := c.run(ctx, nil, "kill-session", "-t", target(name)); err != nil {
		if ok, herr := c.HasSession(ctx, name); herr == nil && !ok {
			return nil
		}
		return err
	}
	return nil
}

// paneRoots are the processes of the panes list-panes listed (pane pid, dead, server pid) that are still the
// panes' own: a child of the server, and for a dead pane one tmux has not reaped yet (its group may hold what the
// agent left). tmux names a dead pane by the PID its process had, which another process may have now — another
// session's agent, another test's tmux server, anything of the user's: that one and its group and descendants
// are not the pane's to end.
func paneRoots(out string, read func(pid int) (procs.Stat, error)) []int {
	var roots []int
	for _, line := range strings.Fields(out) {
		f := strings.Split(line, fieldSep)
		if len(f) != 3 {
			continue
		}
		pid, err1 := strconv.Atoi(f[0])
		server, err2 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil || pid <= 0 {
			continue
		}
		st, err := read(pid)
		if err != nil || st.PPID != server || (f[1] == "1" && st.State != 'Z') {
			continue
		}
		roots = append(roots, pid)
	}
	return roots
}

// ServerPID is the tmux server's process id (over the control connection when there is one).
func (c *Client) ServerPID(ctx context.Context) (int, error) {
	out, err := c.query(ctx, "display-message", "-p", "#{pid}")
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(out))
}

// KillServer ends the socket's tmux server and every process below it, by PID, and removes the socket. No
// server is not an error.
func (c *Client) KillServer(ctx context.Context) error {
	out, err := c.run(ctx, nil, "display-message", "-p", "#{pid}"+fieldSep+"#{socket_path}")
	if err != nil {
		if noServer(err) {
			// A server that died by a signal (or crashed) left its socket: nobody listens on it any more.
			_ = os.Remove(c.defaultSocketPath())
			return nil
		}
		return err
	}
	pidText, socket, _ := strings.Cut(strings.TrimRight(out, "\n"), fieldSep)
	pid, err := strconv.Atoi(pidText)
	if err != nil {
		return fmt.Errorf("tmux server pid %q: %w", pidText, err)
	}
	// One read of the process table for the whole server: it was read again for each process below it.
	table := procs.Snapshot()
	killTree(table, table.Descendants(pid))
	_, _ = c.run(ctx, nil, "kill-server")
	if procs.Alive(pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	// A server killed by signal leaves its socket behind; one that exited has removed it already.
	if socket != "" {
		_ = os.Remove(socket)
	}
	return nil
}

// defaultSocketPath is where tmux puts a -L socket: $TMUX_TMPDIR (or /tmp), tmux-UID, the name.
func (c *Client) defaultSocketPath() string {
	dir := os.Getenv("TMUX_TMPDIR")
	if dir == "" {
		dir = "/tmp"
	}
	return filepath.Join(dir, "tmux-"+strconv.Itoa(os.Getuid()), c.socket)
}

// killTree signals roots, their process groups and all their descendants in table, then waits for them to go.
// Each is signalled only while it is the process it was when listed (its start time): one that ended meanwhile
// may have left its PID to another.
func killTree(table procs.Table, roots []int) {
	if len(roots) == 0 {
		return
	}
	pids := map[int]uint64{}
	for _, r := range roots {
		for _, p := range append([]int{r}, table.Descendants(r)...) {
			if st, err := procs.Read(p); err == nil {
				pids[p] = st.Start
			}
		}
	}
	same := func(p int) bool {
		st, err := procs.Read(p)
		return err == nil && st.Start == pids[p]
	}
	signal := func(sig syscall.Signal) {
		for _, r := range roots {
			if pgid, err := syscall.Getpgid(r); err == nil && pgid == r && same(r) {
				_ = syscall.Kill(-pgid, sig)
			}
		}
		for p := range pids {
			if same(p) {
				_ = syscall.Kill(p, sig)
			}
		}
	}
	signal(syscall.SIGTERM)
	deadline := time.Now().Add(killGrace)
	for time.Now().Before(deadline) {
		if !anyAlive(pids) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	signal(syscall.SIGKILL)
}

func anyAlive(pids map[int]uint64) bool {
	for p := range pids {
		if procs.Alive(p) {
			return true
		}
	}
	return false
}
