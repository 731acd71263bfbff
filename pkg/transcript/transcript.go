// Package transcript reads what a run's agent did: the terminal log tmux pipes a session's output to
// (<root>/logs/<session>.log), or the headless runner's JSONL event stream. `ace logs`, the dashboard and the
// handover to another agent read it here, so that each shows the same text.
package transcript

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/headless"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tmuxops"
)

// Transcript is one run's record of its agent.
type Transcript struct {
	Path string
	// Format is the headless stream's format (headless.NewStream); "" for a terminal log.
	Format string
}

// TerminalLog is where tmux pipes session's output under ace's root.
func TerminalLog(root, session string) string {
	return filepath.Join(root, "logs", session+".log")
}

// Of is the run's transcript under root; ok is false while it has none (no session, no conversation yet).
func Of(root string, r *store.Run) (t Transcript, ok bool) {
	if p, f := r.State.Transcript, r.State.ExecFormat; p != "" && f != "" {
		return Transcript{Path: p, Format: f}, true
	}
	if r.Session == "" {
		return Transcript{}, false
	}
	return Transcript{Path: TerminalLog(root, r.Session)}, true
}

// Headless reports whether the transcript is an event stream rather than a terminal log.
func (t Transcript) Headless() bool { return t.Format != "" }

// Tail is the end of the transcript as text, at most n bytes from a line start: a terminal log without its escape
// sequences and with repeated lines (spinners, redraws) folded, an event stream rendered as `ace logs` prints it.
// A transcript not written yet is an error that wraps os.ErrNotExist.
func (t Transcript) Tail(n int) (string, error) {
	raw, cut, err := readEnd(t.Path, int64(n)*4)
	if err != nil {
		return "", err
	}
	var text string
	if t.Headless() {
		st, err := agents.Parsers().NewStream(t.Format)
		if err != nil {
			return "", err
		}
		var b strings.Builder
		for i, ev := range append(st.Feed(raw), st.Close()...) {
			if i == 0 && cut && ev.Kind == headless.KindRaw {
				continue // the line the window cut into
			}
			_ = headless.Render(&b, ev)
		}
		text = b.String()
	} else {
		text = terminalText(raw)
	}
	return Last(text, n), nil
}

// terminalText is a raw terminal log as lines of text: escape sequences removed, carriage returns made line ends,
// blank lines and a line repeated right after itself left out.
func terminalText(raw []byte) string {
	s := tmuxops.StripANSI(string(raw))
	s = strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(s)
	var out []string
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimRight(l, " \t")
		if l != "" && (len(out) == 0 || out[len(out)-1] != l) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// readEnd reads at most limit bytes at the end of the file at path, from a line start when it had to skip (cut).
func readEnd(path string, limit int64) (b []byte, cut bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, fmt.Errorf("open transcript: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, fmt.Errorf("transcript: %w", err)
	}
	off := max(fi.Size()-limit, 0)
	if b, err = io.ReadAll(io.NewSectionReader(f, off, fi.Size()-off)); err != nil {
		return nil, false, fmt.Errorf("read transcript %s: %w", path, err)
	}
	if off > 0 {
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return b, off > 0, nil
}

// Last is the end of s in at most n bytes, from a line start and never inside a rune.
func Last(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	cut := len(s) - n
	for cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut++
	}
	s = s[cut:]
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < len(s)-1 {
		return s[i+1:]
	}
	return s
}

// Missing reports whether err says the transcript has not been written yet.
func Missing(err error) bool { return errors.Is(err, os.ErrNotExist) }
