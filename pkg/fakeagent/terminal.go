package fakeagent

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"

	"golang.org/x/term"
	"os"
)

// readInput turns terminal bytes into inputs: bracketed pastes (tmux turns pasted newlines into CR; they are
// mapped back to LF), Enter, and single keys.
func (a *agent) readInput(r io.Reader) {
	br := bufio.NewReader(r)
	const start, end = "\x1b[200~", "\x1b[201~"
	for {
		b, err := br.ReadByte()
		if err != nil {
			return
		}
		if b == 0x1b {
			// Only what came with the Esc: Peek(5) waited for five bytes more, so an arrow key (3 bytes) held
			// back the keys after it until more input came.
			peek, _ := br.Peek(min(5, br.Buffered()))
			if string(peek) == start[1:] {
				br.Discard(5)
				var sb strings.Builder
				for {
					c, err := br.ReadByte()
					if err != nil {
						return
					}
					sb.WriteByte(c)
					if strings.HasSuffix(sb.String(), end) {
						break
					}
				}
				text := strings.TrimSuffix(sb.String(), end)
				a.inputs <- input{paste: strings.ReplaceAll(text, "\r", "\n"), at: time.Now()}
				continue
			}
			// Another escape sequence (arrow keys …): drop it, but report a lone Esc.
			if br.Buffered() == 0 {
				a.inputs <- input{key: 0x1b}
				continue
			}
			if next, _ := br.Peek(1); len(next) == 1 && next[0] == '[' {
				br.ReadByte()
				for {
					c, err := br.ReadByte()
					if err != nil || (c >= 0x40 && c <= 0x7e) {
						if c == 'A' || c == 'B' { // the arrow keys up and down: a menu's cursor moves
							a.inputs <- input{arrow: c, at: time.Now()}
						}
						break
					}
				}
			}
			continue
		}
		if b == '\r' || b == '\n' {
			a.inputs <- input{enter: true, at: time.Now()}
			continue
		}
		a.inputs <- input{key: b, at: time.Now()}
	}
}

func (a *agent) say(line string) {
	a.lines = append(a.lines, strings.Split(line, "\n")...)
	if len(a.lines) > 500 {
		a.lines = a.lines[len(a.lines)-500:]
	}
}

func size() (int, int) {
	w, h, err := term.GetSize(int(os.Stdout.Fd()))
	if err != nil || w <= 0 || h <= 0 {
		return 100, 30
	}
	return w, h
}

func (a *agent) drawSplash() {
	fmt.Fprint(a.out, "\x1b[H\x1b[2J\r\n  fake-agent is starting…\r\n")
}

// draw repaints the whole screen: transcript, then the dialog or the composer and the status line.
func (a *agent) draw() {
	w, h := size()
	var bottom []string
	switch {
	case a.dialog != nil:
		bottom = append([]string{strings.Repeat("─", min(w, 60))}, a.dialog...)
	case a.busy:
		bottom = []string{strings.Repeat("─", min(w, 60)), "› ", "• Working (esc to interrupt)"}
	default:
		comp := a.o.readyMarker
		if a.composer != "" {
			comp = "› " + firstLine(a.composer)
		}
		bottom = []string{strings.Repeat("─", min(w, 60)), comp, a.o.status}
	}
	room := max(h-len(bottom)-1, 1)
	lines := a.lines
	if len(lines) > room {
		lines = lines[len(lines)-room:]
	}
	var b strings.Builder
	b.WriteString("\x1b[H\x1b[2J")
	for _, l := range append(lines, bottom...) {
		if len(l) > w {
			l = l[:w]
		}
		b.WriteString(l + "\r\n")
	}
	fmt.Fprint(a.out, strings.TrimSuffix(b.String(), "\r\n"))
}
