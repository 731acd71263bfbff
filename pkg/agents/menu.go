package agents

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// A Menu is a list of options an agent shows, read from its screen: a dialog (trust, sign-in, API key, model
// notice), a permission prompt, a limit menu or a question. ace answers menus by meaning: it finds the option
// whose text says what it wants, moves the cursor there and confirms only once the screen shows that option
// selected — never by position or by accepting the preselected default, which moves between releases (claude
// 2.1.331 put "No, exit" first and preselected in its trust dialog, where 2.1.197 had "Yes" first).
type Menu struct {
	Options  []Option
	Selected int // index of the option the cursor is on
	// Question is the text drawn right above the first option (up to three lines): what the menu asks.
	Question string
}

// Option is one entry of a menu.
type Option struct {
	Number string // "2" for "2. Casual"; "" for a menu without numbers
	Text   string // the option's words, without cursor, number and box borders
}

// menuCursor is what CLIs draw in front of the selected option: claude ❯, codex › or >, gemini ●.
const menuCursor = "❯›>●"

// menuLines is how far up from the bottom a menu is looked for: a question's options and their descriptions fit.
const menuLines = 30

var numbered = regexp.MustCompile(`^(\d{1,2})\.\s+(\S.*)$`)

// ParseMenu reads the lowest menu on screen: the option the cursor is on and the options around it at the
// same indentation (numbered, when the selected one is), lines indented deeper being an option's description.
// It reports false when the screen shows no menu of at least two options.
func ParseMenu(screen string) (Menu, bool) {
	lines := strings.Split(strings.TrimRight(screen, "\n "), "\n")
	if len(lines) > menuLines {
		lines = lines[len(lines)-menuLines:]
	}
	for i := len(lines) - 1; i >= 0; i-- {
		col, text, ok := cursorLine(lines[i])
		if !ok {
			continue
		}
		if m, ok := menuAround(lines, i, col, text); ok {
			return m, true
		}
	}
	return Menu{}, false
}

// cursorLine reports whether line shows a cursor in front of an option, the column where the option's text
// starts and that text.
func cursorLine(line string) (col int, text string, ok bool) {
	body, off := unboxed(line)
	trimmed := strings.TrimLeft(body, " ")
	r, size := utf8.DecodeRuneInString(trimmed)
	if size == 0 || !strings.ContainsRune(menuCursor, r) {
		return 0, "", false
	}
	rest := trimmed[size:]
	text = strings.TrimLeft(rest, " ")
	if text == "" || len(rest) == len(text) { // a cursor is followed by a space, then the option
		return 0, "", false
	}
	if r == '●' && !numbered.MatchString(text) {
		// gemini's cursor is always in front of a numbered option; claude draws ● in front of each entry of its
		// transcript ("● Write(GREETING.md)", "● Auto mode can't check actions…"), which is no menu.
		return 0, "", false
	}
	col = off + utf8.RuneCountInString(body[:len(body)-len(trimmed)]) + 1 + (len(rest) - len(text))
	return col, strings.TrimSpace(text), true
}

// sidePanel is a panel a CLI draws right of its dialog (claude 2.1.332's changed files, "│1 file changed"),
// after the dialog's line and a border: not the dialog's text.
var sidePanel = regexp.MustCompile(`\s{2,}[│┃].*$`)

// unboxed strips the border of a box a CLI draws its dialog in (gemini: │ … │), and a panel right of it, and
// returns what is inside and the column it starts at.
func unboxed(line string) (string, int) {
	line = strings.TrimRight(sidePanel.ReplaceAllString(line, ""), " ")
	off := 0
	t := strings.TrimLeft(line, " ")
	if r, size := utf8.DecodeRuneInString(t); r == '│' || r == '┃' {
		off = utf8.RuneCountInString(line[:len(line)-len(t)]) + 1
		line = t[size:]
		line = strings.TrimRight(strings.TrimRight(line, " │┃"), " ")
	}
	return line, off
}

// textAt returns the text of line when it starts exactly at column col with nothing but spaces before it.
func textAt(line string, col int) (string, bool) {
	body, off := unboxed(line)
	trimmed := strings.TrimLeft(body, " ")
	if trimmed == "" {
		return "", false
	}
	return strings.TrimSpace(trimmed), off+utf8.RuneCountInString(body[:len(body)-len(trimmed)]) == col
}

// indentOf is the column where line's text starts, -1 for a blank line.
func indentOf(line string) int {
	body, off := unboxed(line)
	trimmed := strings.TrimLeft(body, " ")
	if trimmed == "" {
		return -1
	}
	return off + utf8.RuneCountInString(body[:len(body)-len(trimmed)])
}

// menuAround collects the options around the cursor at line i.
func menuAround(lines []string, i, col int, text string) (Menu, bool) {
	isNumbered := numbered.MatchString(text)
	option := func(line string) (Option, bool) {
		t, ok := textAt(line, col)
		if !ok {
			return Option{}, false
		}
		if m := numbered.FindStringSubmatch(t); m != nil {
			return Option{Number: m[1], Text: strings.TrimSpace(m[2])}, isNumbered
		}
		return Option{Text: t}, !isNumbered
	}
	// continues reports whether line may sit between two options: a description indented deeper or, in a
	// numbered menu, a blank line or a rule (claude draws one above its question's last option, "4. Chat about
	// this").
	continues := func(line string) bool {
		in := indentOf(line)
		return in > col || in < 0 && isNumbered || isNumbered && isRule(line)
	}
	sel := Option{Text: text}
	if m := numbered.FindStringSubmatch(text); m != nil {
		sel = Option{Number: m[1], Text: strings.TrimSpace(m[2])}
	}
	var above []Option
	top := i // the first option's line
	for j := i - 1; j >= 0; j-- {
		if o, ok := option(lines[j]); ok {
			above = append([]Option{o}, above...)
			top = j
			continue
		}
		if !continues(lines[j]) {
			break
		}
	}
	m := Menu{Options: append(above, sel), Selected: len(above), Question: questionAbove(lines, top)}
	for j := i + 1; j < len(lines); j++ {
		if o, ok := option(lines[j]); ok {
			m.Options = append(m.Options, o)
			continue
		}
		if !continues(lines[j]) {
			break
		}
	}
	return m, len(m.Options) >= 2
}

// questionAbove is the text right above line top: up to three lines, blank lines before it skipped, ended by
// a blank line; box borders, rules and check boxes are not text.
func questionAbove(lines []string, top int) string {
	var q []string
	for j := top - 1; j >= 0 && len(q) < 3; j-- {
		l := strings.Trim(strings.TrimSpace(lines[j]), "│┃─━╭╮╰╯☐☒ ")
		if l == "" {
			if len(q) > 0 {
				break
			}
			continue
		}
		q = append([]string{l}, q...)
	}
	return strings.Join(q, "\n")
}

// Find returns the index of the first option whose text matches want, or -1.
func (m Menu) Find(want *regexp.Regexp) int {
	if want == nil {
		return -1
	}
	for i, o := range m.Options {
		if want.MatchString(o.Text) {
			return i
		}
	}
	return -1
}

// Moves are the arrow keys that take the cursor from the selected option to option i.
func (m Menu) Moves(i int) []string {
	var keys []string
	for n := m.Selected; n < i; n++ {
		keys = append(keys, "Down")
	}
	for n := m.Selected; n > i; n-- {
		keys = append(keys, "Up")
	}
	return keys
}

// freeText is the option of a question menu that takes the human's own words.
var freeText = regexp.MustCompile(`(?i)^(type something|other|something else|enter your own|custom)\b`)

// FreeText returns the index of the option that takes typed text ("Type something."), or -1.
func (m Menu) FreeText() int { return m.Find(freeText) }

// Choose returns the option an answer names: its number, or its text (case and trailing punctuation aside);
// -1 when the answer names none — it is then free text.
func (m Menu) Choose(answer string) int {
	a := strings.TrimSpace(answer)
	norm := func(s string) string { return strings.ToLower(strings.TrimRight(strings.TrimSpace(s), ".!")) }
	for i, o := range m.Options {
		if o.Number != "" && a == o.Number || norm(a) == norm(o.Text) && norm(a) != "" {
			return i
		}
	}
	return -1
}

// Describe lists the options as text, the selected one marked: what a human reads on the issue.
func (m Menu) Describe() string {
	var b strings.Builder
	for i, o := range m.Options {
		mark := "- "
		if o.Number != "" {
			mark = o.Number + ". "
		}
		b.WriteString(mark + o.Text)
		if i == m.Selected {
			b.WriteString(" (selected)")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// isRule reports whether line is a horizontal rule: nothing but box-drawing dashes.
func isRule(line string) bool {
	t := strings.TrimSpace(line)
	return t != "" && strings.Trim(t, "─━") == ""
}
