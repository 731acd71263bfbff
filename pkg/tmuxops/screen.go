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
	Session    string
	Dead       bool
	ExitStatus int
	PID        int
	// Activity is when the pane last produced output (tmux's window_activity, second resolution).
	Activity time.Time
}

// Panes lists the pane of every session in one tmux call; no server means no panes.
func (c *Client) Panes(ctx context.Context) ([]Pane, error) {
	// Only fields tmux keeps in memory: #{pane_current_command}, say, would make the server read /proc for
	// every pane on every listing.
	out, err := c.query(ctx, "list-panes", "-a", "-F",
		"#{session_name}\t#{pane_dead}\t#{pane_dead_status}\t#{pane_pid}\t#{window_activity}")
	if err != nil {
		if noServer(err) {
			c.serverSeen(false)
			return nil, nil
		}
		return nil, err
	}
	var panes []Pane
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Split(l, "\t")
		if len(f) < 5 || strings.HasPrefix(f[0], ControlPrefix) {
			continue
		}
		status, _ := strconv.Atoi(f[2])
		pid, _ := strconv.Atoi(f[3])
		act, _ := strconv.ParseInt(f[4], 10, 64)
		panes = append(panes, Pane{Session: f[0], Dead: f[1] == "1", ExitStatus: status, PID: pid,
			Activity: time.Unix(act, 0)})
	}
	c.serverSeen(len(panes) > 0)
	return panes, nil
}
