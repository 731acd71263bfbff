package tmuxops

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Paste puts text into the session's pane as one bracketed paste (the application sees it as pasted, not
// typed, so newlines do not submit). The text travels on stdin, never on a command line.
func (c *Client) Paste(ctx context.Context, name, text string) error {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	buf := "ace-" + hex.EncodeToString(b)
	if _, err := c.run(ctx, []byte(text), "load-buffer", "-b", buf, "-"); err != nil {
		return fmt.Errorf("load paste buffer: %w", err)
	}
	if _, err := c.run(ctx, nil, "paste-buffer", "-p", "-d", "-b", buf, "-t", paneTarget(name)); err != nil {
		_, _ = c.run(ctx, nil, "delete-buffer", "-b", buf)
		return fmt.Errorf("paste into %s: %w", name, err)
	}
	return nil
}

// SendKeys sends tmux key names ("Enter", "Escape", "1", "y") to the session.
func (c *Client) SendKeys(ctx context.Context, name string, keys ...string) error {
	args := append([]string{"send-keys", "-t", paneTarget(name)}, keys...)
	if _, err := c.run(ctx, nil, args...); err != nil {
		return fmt.Errorf("send keys to %s: %w", name, err)
	}
	return nil
}

var ansi = regexp.MustCompile(`\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[@-Z\\-_]`)

// StripANSI removes terminal escape sequences.
func StripANSI(s string) string { return ansi.ReplaceAllString(s, "") }

// Capture returns the visible screen (plus historyLines of scrollback), escape sequences removed and trailing
// blank space trimmed.
func (c *Client) Capture(ctx context.Context, name string, historyLines int) (string, error) {
	args := []string{"capture-pane", "-p", "-t", paneTarget(name)}
	if historyLines > 0 {
		args = append(args, "-S", "-"+strconv.Itoa(historyLines))
	}
	out, err := c.query(ctx, args...)
	if err != nil {
		return "", fmt.Errorf("capture %s: %w", name, err)
	}
	lines := strings.Split(StripANSI(out), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n"), nil
}

// Pane is one session's pane as tmux reports it.
type Pane struct {
	Session string
	Dead    bool
	// ExitStatus is a dead pane's exit status: 128+N for signal N, ExitUnknown when tmux has not reaped it.
	ExitStatus int
	PID        int
	// Activity is when the pane last produced output (tmux's window_activity, second resolution).
	Activity time.Time
}

// ExitUnknown is the ExitStatus of a dead pane whose process tmux has not reaped: tmux marks a pane dead when
// its terminal closes, and reaps the process after (tmux 3.3 was seen to leave it a zombie for good). Reading
// that as 0 would take a crash for a clean exit.
const ExitUnknown = -1

// exitStatus reads #{pane_dead_status} and #{pane_dead_signal}; a signal N is 128+N, as a shell reports it.
func exitStatus(status, signal string) int {
	if sig, err := strconv.Atoi(signal); err == nil && sig > 0 {
		return 128 + sig
	}
	if st, err := strconv.Atoi(status); err == nil {
		return st
	}
	return ExitUnknown
}

// fieldSep separates the fields of tmux's formatted output. It is printable on purpose: a tmux client without a
// UTF-8 locale (cron, a service manager, an empty environment) prints control characters such as a tab as "_".
const fieldSep = "|"

// Panes lists the pane of every session in one tmux call; no server means no panes.
func (c *Client) Panes(ctx context.Context) ([]Pane, error) {
	// Only fields tmux keeps in memory: #{pane_current_command}, say, would make the server read /proc for
	// every pane on every listing.
	out, err := c.query(ctx, "list-panes", "-a", "-F", strings.Join([]string{"#{session_name}", "#{pane_dead}",
		"#{pane_dead_status}", "#{pane_pid}", "#{window_activity}", "#{pane_dead_signal}"}, fieldSep))
	if err != nil {
		if noServer(err) {
			c.serverSeen(false)
			return nil, nil
		}
		return nil, err
	}
	var panes []Pane
	// Only newlines are trimmed: a live pane's last field (its death signal) is empty.
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		f := strings.Split(l, fieldSep)
		if len(f) < 6 {
			continue
		}
		// Only the session name may hold the separator: the five fields after it are numbers.
		f = append([]string{strings.Join(f[:len(f)-5], fieldSep)}, f[len(f)-5:]...)
		if strings.HasPrefix(f[0], ControlPrefix) {
			continue
		}
		pid, _ := strconv.Atoi(f[3])
		act, _ := strconv.ParseInt(f[4], 10, 64)
		p := Pane{Session: f[0], PID: pid, Activity: time.Unix(act, 0)}
		if f[1] == "1" {
			p.Dead = true
			p.ExitStatus = exitStatus(f[2], f[5])
		}
		panes = append(panes, p)
	}
	// A server with no agent left keeps its control connection (and so lives on) while this client watches:
	// dropping it let the server exit just as a run started its next agent there, taking the new session with it.
	if len(panes) > 0 {
		c.serverSeen(true)
	}
	return panes, nil
}
