// Package sanitize is the one place where text that comes from the tracker (issue titles, bodies, comments,
// author names, labels) is made safe before it reaches an agent, a terminal, a branch name, a pull request or a
// status comment. It removes what a reader cannot see but a machine acts on: terminal escape sequences, control
// characters and NUL bytes, bidi overrides, zero-width and other invisible format characters, and HTML comments
// (instructions hidden from the people who read the issue on GitHub).
package sanitize

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

const (
	// MaxText bounds a body or comment: longer text is cut with a note saying so.
	MaxText = 256 << 10
	// MaxLine bounds a title, in runes (GitHub's own limit for an issue title is 256 characters).
	MaxLine = 256
)

var (
	htmlComment = regexp.MustCompile(`(?s)<!--.*?-->`)
	// CSI, OSC (BEL or ST terminated), DCS/SOS/PM/APC strings, and the other two-byte escapes.
	ansiEscape = regexp.MustCompile(`\x1b\[[0-?]*[ -/]*[@-~]|\x1b[\]PX^_][^\x07\x1b]*(\x07|\x1b\\)|\x1b[ -/]*[0-~]`)
)

// Clean removes HTML comments, escape sequences, control characters other than newline and tab, and invisible
// format characters from s, keeping its lines. It does not bound the size: callers with their own limit use it;
// tracker text goes through Text or Line.
func Clean(s string) string {
	s = htmlComment.ReplaceAllString(s, "")
	s = ansiEscape.ReplaceAllString(s, "")
	var b strings.Builder
	b.Grow(len(s))
	prev := rune(0)
	for _, r := range s { // invalid UTF-8 arrives here as U+FFFD
		switch {
		case r == '\n' || r == '\t':
		case r == '\u2028' || r == '\u2029': // line and paragraph separators: a plain newline
			r = '\n'
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0): // C0 (NUL, ESC, CR …), DEL, C1 (CSI 0x9b …)
			continue
		case unicode.Is(unicode.Cf, r): // bidi controls, zero-width characters, BOM, soft hyphen, tag characters
			continue
		case r >= 0xfe00 && r <= 0xfe0e, r >= 0xe0100 && r <= 0xe01ef: // variation selectors: invisible data
			continue
		case r == 0xfe0f && (prev == 0xfe0f || prev == 0): // emoji presentation, once, after something
			continue
		}
		b.WriteRune(r)
		prev = r
	}
	return b.String()
}

// Text is Clean capped at MaxText bytes; a cut text ends with a note saying it was cut.
func Text(s string) string {
	s = Clean(s)
	if len(s) <= MaxText {
		return s
	}
	return Cut(s, MaxText) + fmt.Sprintf("\n\n[… cut by ace: the text was longer than %d KiB]\n", MaxText>>10)
}

// Line is Clean on one line: every run of white space (newlines included) becomes one space, ends are trimmed,
// and a line longer than MaxLine runes is cut and ends with "…".
func Line(s string) string {
	s = strings.Join(strings.Fields(Clean(s)), " ")
	if utf8.RuneCountInString(s) <= MaxLine {
		return s
	}
	n := 0
	for i := range s {
		if n == MaxLine-1 {
			return strings.TrimRight(s[:i], " ") + "…"
		}
		n++
	}
	return s
}

// Cut returns at most max bytes of s, never splitting a rune.
func Cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
