package agent

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// Retry is a CLI saying that it retries its model's API (it could not reach it, or the API failed): its attempt,
// of Max when it says, and what it said of the error.
type Retry struct {
	Attempt, Max int
	Error        string
}

// RetryPatterns are how a CLI says it retries its model's API, where ace reads it: a line of its terminal screen
// (drawn while it waits for the next attempt) and a line of its stderr (headless, where its stream says
// nothing). Named groups: attempt, max, error, each optional. Its headless stream's and live protocol's retry
// reports are read by its parser and its live adapter.
type RetryPatterns struct {
	Screen []*regexp.Regexp
	Stderr []*regexp.Regexp
}

// RetryOnScreen finds the CLI's retry line on its screen (the lowest, the one drawn last).
func (p Profile) RetryOnScreen(screen string) (Retry, bool) {
	if p.adapter == nil {
		return Retry{}, false
	}
	return MatchRetry(p.adapter.Retries.Screen, screen)
}

// MatchRetry finds the last match of any of res in text, as a Retry.
func MatchRetry(res []*regexp.Regexp, text string) (Retry, bool) {
	var best []int
	var bestRe *regexp.Regexp
	for _, re := range res {
		all := re.FindAllStringSubmatchIndex(text, -1)
		if len(all) > 0 && (best == nil || all[len(all)-1][0] > best[0]) {
			best, bestRe = all[len(all)-1], re
		}
	}
	if best == nil {
		return Retry{}, false
	}
	group := func(name string) string {
		i := bestRe.SubexpIndex(name)
		if i < 0 || best[2*i] < 0 {
			return ""
		}
		return text[best[2*i]:best[2*i+1]]
	}
	rt := Retry{Error: cleanError(group("error"))}
	rt.Attempt, _ = strconv.Atoi(group("attempt"))
	rt.Max, _ = strconv.Atoi(group("max"))
	return rt, true
}

// cleanError is an error as a CLI printed it, without the spinner or bullet in front and the space around.
func cleanError(s string) string {
	return strings.TrimSpace(strings.TrimLeftFunc(s, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '('
	}))
}
