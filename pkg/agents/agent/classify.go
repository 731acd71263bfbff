package agent

import (
	"regexp"
	"strings"
)

// bottomLines is how much of the screen dialogs and prompts are looked for in: older text scrolled up (a
// question that was answered, a finished turn) must not decide the state.
const bottomLines = 15

func bottom(screen string) string {
	lines := strings.Split(strings.TrimRight(screen, "\n "), "\n")
	if len(lines) > bottomLines {
		lines = lines[len(lines)-bottomLines:]
	}
	return strings.Join(lines, "\n")
}

// Classify reads a state from the screen and the pane: a dead pane is exited (status 0) or crashed; a starting
// marker near the bottom is starting; then a dialog, an approval or a question near the bottom — unless a busy or
// ready marker is drawn below it: CLIs that draw inline (gemini) leave an answered dialog on screen above what
// follows it, and that must not decide the state; then busy or ready, whichever is drawn lower — an agent that
// prints "working…" and then its prompt has finished — except for CLIs whose composer stays on screen under the
// working line (ComposerStays): there a busy marker anywhere near the bottom is busy; else starting.
func (p Profile) Classify(screen string, paneDead bool, exitStatus int) State {
	if paneDead {
		if exitStatus == 0 {
			return StateExited
		}
		return StateCrashed
	}
	b := bottom(screen)
	m := p.Markers
	if m.Starting != nil && m.Starting.MatchString(b) {
		return StateStarting
	}
	after := max(lastMatch(m.Busy, b), lastMatch(m.Ready, b))
	for _, d := range p.Dialogs {
		switch {
		case lastMatch(d.Match, b) <= after:
		case !d.Permission:
			return StateDialog
		case d.Choose == nil && p.AutoApprove:
			return StateDialog // a permission without options, answered with its keys (PermissionKeys)
		case d.Choose == nil:
			return StateApproval // the same, for a human
		}
	}
	busy, ready := lastMatch(m.Busy, b), lastMatch(m.Ready, b)
	switch {
	case lastMatch(m.Approval, b) > after:
		return StateApproval
	case lastMatch(m.Question, b) > after:
		return StateQuestion
	case busy >= 0 && (p.ComposerStays || busy >= ready):
		return StateBusy
	case ready >= 0:
		return StateReady
	}
	return StateStarting
}

// lastMatch is the offset of the line where re last matches in text, or -1 (also for a nil re): markers on one
// line tie.
func lastMatch(re *regexp.Regexp, text string) int {
	if re == nil {
		return -1
	}
	all := re.FindAllStringIndex(text, -1)
	if len(all) == 0 {
		return -1
	}
	return strings.LastIndex(text[:all[len(all)-1][0]], "\n") + 1
}

// TurnStopped reports whether the CLI stopped the agent's turn by itself and waits for a message to go on: its
// Stopped notice is the last entry of the transcript (nobody wrote since) and the composer is empty. An agent
// stopped this way has not finished; waiting idle_after before the nudge only stalls the run.
func (p Profile) TurnStopped(screen string) bool {
	m := p.Markers
	t := transcript(screen)
	at := lastMatch(m.Stopped, t)
	return at >= 0 && lastMatch(m.Entry, t) <= at
}

// composerLines is how far up from the bottom the composer's block reaches: claude's rule, composer, rule and
// footer, with a hint line.
const composerLines = 6

// transcript is the screen above the composer: CLIs draw their composer under a rule (claude between two), and
// what it shows — a placeholder, text typed and not yet sent — is no entry of the transcript.
func transcript(screen string) string {
	lines := strings.Split(strings.TrimRight(screen, "\n "), "\n")
	cut := len(lines)
	for i := len(lines) - 1; i >= 0 && i >= len(lines)-composerLines; i-- {
		if isRule(lines[i]) {
			cut = i
		}
	}
	return strings.Join(lines[:cut], "\n")
}

// PromptUnsent reports whether the screen shows prompt still in the composer, not taken: no state ace knows (not
// working, and no ready composer: its placeholder is gone because the text is in it) and the prompt's beginning —
// or the placeholder of a long paste — near the bottom. gemini 0.61 sat so for minutes after ace had seen its
// Enter taken (the screen went to a known state for a moment), on a quiet machine too (seen in CI).
func (p Profile) PromptUnsent(screen, prompt string) bool {
	if p.Markers.Ready == nil || p.Classify(screen, false, 0) != StateStarting {
		return false
	}
	b := belowLastRule(screen)
	if p.Markers.Pasted != nil && p.Markers.Pasted.MatchString(b) {
		return true
	}
	probe := promptProbe(prompt)
	return probe != "" && strings.Contains(b, probe)
}

// belowLastRule is what a CLI draws under the last rule near the bottom of its screen: its composer and the
// hints under it (gemini, the fake agent) — not the transcript above, where a submitted prompt is echoed, nor a
// dialog drawn in the composer's place. "" when there is no rule near the bottom.
func belowLastRule(screen string) string {
	lines := strings.Split(strings.TrimRight(screen, "\n "), "\n")
	for i := len(lines) - 1; i >= 0 && i >= len(lines)-bottomLines; i-- {
		if isRule(lines[i]) {
			return strings.Join(lines[i+1:], "\n")
		}
	}
	return ""
}

// isRule reports whether line is a horizontal rule a CLI draws around its composer: ten or more ─ alone.
func isRule(line string) bool {
	t := strings.TrimSpace(line)
	return len(t) >= 10*len("─") && strings.Trim(t, "─") == ""
}

// IsReady reports whether the composer takes input.
func (p Profile) IsReady(screen string) bool { return p.Classify(screen, false, 0) == StateReady }

// Submitted reports whether a pasted prompt was taken, from the screen before Enter and the one after: the screen
// changed, and it either shows a state ace knows (working, ready again, a question, a dialog) or no longer shows
// the prompt's beginning near the bottom, where the composer is. A changed screen alone is not enough: on a slow
// machine the paste is still being drawn when "before" is read, and gemini 0.61 then keeps the whole prompt in
// its composer (no placeholder, no marker) while the screen differs — taken for submitted, it was never sent and
// the run sat at an unsent prompt (seen in CI). A long prompt the CLI draws as a placeholder ("[Pasted Text: 529
// chars]") has no beginning on screen to look for, so its absence proves nothing: a paste shown as a placeholder
// counts as taken only on a known screen. Under load gemini lost such an Enter while the screen changed only by
// the paste's passing hint, and, resuming a conversation, drew its composer before the session was back, took
// the paste, then blanked the screen to redraw the history ("Resuming session...") with the prompt unsent.
func (p Profile) Submitted(before, after, prompt string) bool {
	if before == after {
		return false
	}
	if p.Classify(after, false, 0) != StateStarting {
		return true
	}
	if p.Markers.Pasted != nil && (p.Markers.Pasted.MatchString(bottom(before)) || p.Markers.Pasted.MatchString(bottom(after))) {
		return false
	}
	probe := promptProbe(prompt)
	return probe == "" || !strings.Contains(bottom(after), probe)
}

// ShowsPaste reports whether the screen shows prompt pasted into the composer: its beginning near the bottom,
// or the placeholder the CLI draws for a long paste. A profile without a ready marker (a command ace knows
// nothing about) is taken at its word.
func (p Profile) ShowsPaste(screen, prompt string) bool {
	if p.Markers.Ready == nil {
		return true
	}
	b := bottom(screen)
	if p.Markers.Pasted != nil && p.Markers.Pasted.MatchString(b) {
		return true
	}
	probe := promptProbe(prompt)
	return probe == "" || strings.Contains(b, probe)
}

// promptProbe is the start of the prompt as any terminal draws it: up to 24 printable ASCII characters (no
// terminal wraps that few; a tab, a wide or a combining character would be drawn differently), or "" when the
// prompt starts with fewer than 8 such characters (nothing to look for).
func promptProbe(prompt string) string {
	s := strings.TrimSpace(prompt)
	n := 0
	for n < len(s) && n < 24 && s[n] >= 0x20 && s[n] < 0x7f {
		n++
	}
	if n < 8 {
		return ""
	}
	return strings.TrimRight(s[:n], " ")
}

// IsBusy reports whether the agent is working.
func (p Profile) IsBusy(screen string) bool { return p.Classify(screen, false, 0) == StateBusy }

// DialogOn returns the dialog on screen, the first of the profile's table (most specific first) drawn below any
// busy or ready marker: first-run dialogs always, permission dialogs only when the profile auto-approves.
func (p Profile) DialogOn(screen string) (Dialog, bool) {
	b := bottom(screen)
	m := p.Markers
	if m.Starting != nil && m.Starting.MatchString(b) {
		return Dialog{}, false
	}
	after := max(lastMatch(m.Busy, b), lastMatch(m.Ready, b))
	for _, d := range p.Dialogs {
		if d.Permission && !p.AutoApprove || lastMatch(d.Match, b) <= after {
			continue
		}
		return d, true
	}
	return Dialog{}, false
}
