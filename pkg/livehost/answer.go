package livehost

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/aceworks/ace/pkg/live"
)

// choice is what an answer to one ask means: option (0-based) when it picks one, else -1; text is what the
// agent gets.
type choice struct {
	option int
	text   string
}

// pick reads an answer to a: an option's number ("2") or its words (any case) pick that option; for an ask
// that takes several, a comma-separated list of those picks them all. Anything else is free text, passed on as
// it was written.
func pick(a live.Ask, answer string) choice {
	if i := optionIndex(a.Options, answer); i >= 0 {
		return choice{i, a.Options[i]}
	}
	if a.Multi && strings.Contains(answer, ",") {
		var picked []string
		for part := range strings.SplitSeq(answer, ",") {
			i := optionIndex(a.Options, part)
			if i < 0 {
				return choice{-1, answer}
			}
			picked = append(picked, a.Options[i])
		}
		return choice{-1, strings.Join(picked, ", ")}
	}
	return choice{-1, answer}
}

func optionIndex(options []string, s string) int {
	s = strings.TrimSpace(s)
	if n, err := strconv.Atoi(s); err == nil && n >= 1 && n <= len(options) {
		return n - 1
	}
	for i, o := range options {
		if strings.EqualFold(strings.TrimSpace(o), s) {
			return i
		}
	}
	return -1
}

// yesNo reads a line typed to answer a permission: y or yes allows, n or no denies, and what follows a no is
// the reason the agent is told ("n, use the other file"). ok is false for anything else.
func yesNo(line string) (allow bool, reason string, ok bool) {
	word, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
	word = strings.ToLower(strings.TrimRight(word, ",.:;!"))
	switch word {
	case "y", "yes":
		// "yes, but …" is no plain yes: the human meant more than the protocol can carry.
		ok := strings.TrimSpace(rest) == ""
		return ok, "", ok
	case "n", "no":
		return false, strings.TrimSpace(rest), true
	}
	return false, "", false
}

// askText shows ask n of m of a question and its options, for the human answering it in the pane.
func askText(a live.Ask, n, m int) string {
	s := fmt.Sprintf("  question %d of %d: %s", n, m, a.Text)
	for i, o := range a.Options {
		s += fmt.Sprintf("\n    %d. %s", i+1, o)
	}
	return s
}

func splitLines(s string) []string { return strings.Split(strings.TrimRight(s, "\n"), "\n") }

func joinLines(lines []string) string { return strings.Join(lines, "\n") }
