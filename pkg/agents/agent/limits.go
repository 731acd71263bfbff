package agent

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// LimitPatterns is how one agent CLI says that its account hit a usage or rate limit, on its screen and in its
// headless stream, and how a menu it opens then is answered. Each adapter owns its table (Adapter.Limits); the
// wording was observed against a scripted model server answering the providers' real error responses (see
// the agents' notes on usage limits).
type LimitPatterns struct {
	// Screen finds a limit message on the screen. A named group "reset" holds the reset time as the CLI shows
	// it; Clock says how to read it.
	Screen []*regexp.Regexp
	// Menus are the dialogs a limit opens, with the keys that keep the user's choice (claude: stop and wait;
	// codex: keep the current model, where Enter would switch it).
	Menus []Dialog
	// Stream finds a limit in a headless turn's last words (its error result, error events, stderr).
	Stream []*regexp.Regexp
	// ExitCodes are headless exit statuses that mean a quota whatever the text says (gemini's 173).
	ExitCodes []int
	// Clock reads the "reset" group into a time.
	Clock ResetClock
	// UnsavedUntilReply: the CLI saves a headless conversation only once the model has answered in it (gemini:
	// `--resume <id>` of one whose first request was refused says "No previous sessions found for this
	// project." and exits 42), so a limit on the first request leaves nothing to resume.
	UnsavedUntilReply bool
}

// ResetClock reads a reset time as a CLI prints it.
type ResetClock string

// The reset clocks the built-in CLIs use.
const (
	// ClockZoned: "7:17pm (UTC)", "7pm (Europe/Berlin)", "Oct 9, 7:17pm (UTC)": minute precision, zone in brackets.
	ClockZoned ResetClock = "zoned"
	// ClockLocal: "7:35 PM": the host's local time, no zone.
	ClockLocal ResetClock = "local"
	// ClockRFC3339: an exact instant (ace's fake agent).
	ClockRFC3339 ResetClock = "rfc3339"
)

// Limit is a usage limit an agent reported.
type Limit struct {
	// Message is the line that said so.
	Message string
	// ResetsAt is when the CLI says the limit resets; zero when it did not say (back off instead). Times read
	// from a minute-precision clock are the start of that minute.
	ResetsAt time.Time
}

// Limits returns the profile's limit patterns: its adapter's, none for a custom agent.
func (p Profile) Limits() LimitPatterns {
	if p.adapter == nil {
		return LimitPatterns{}
	}
	return p.adapter.Limits
}

// LimitOnScreen finds the last limit message on a screen. count is how many limit messages the screen shows,
// so that a caller can tell a new one from one it has already acted on that is still in view.
func (p Profile) LimitOnScreen(screen string, now time.Time) (l Limit, count int, ok bool) {
	return p.Limits().find(p.Limits().Screen, screen, now)
}

// LimitMenu returns the limit menu on screen, whose Choose option keeps the user's choice.
func (p Profile) LimitMenu(screen string) (Dialog, bool) {
	b := bottom(screen)
	for _, d := range p.Limits().Menus {
		if d.Match != nil && d.Match.MatchString(b) {
			return d, true
		}
	}
	return Dialog{}, false
}

// LimitInStream reads a headless turn's end: its last words (error result, error events, stderr) and exit code.
func (p Profile) LimitInStream(text string, exitCode int, now time.Time) (Limit, bool) {
	lp := p.Limits()
	if l, _, ok := lp.find(lp.Stream, text, now); ok {
		return l, true
	}
	for _, c := range lp.ExitCodes {
		if exitCode == c && c != 0 {
			return Limit{Message: firstLine(text)}, true
		}
	}
	return Limit{}, false
}

func (lp LimitPatterns) find(res []*regexp.Regexp, text string, now time.Time) (l Limit, count int, ok bool) {
	last := -1
	for _, re := range res {
		for _, m := range re.FindAllStringSubmatchIndex(text, -1) {
			count++
			if m[0] < last {
				continue
			}
			last = m[0]
			l = Limit{Message: strings.TrimSpace(text[m[0]:m[1]])}
			if i := re.SubexpIndex("reset"); i >= 0 && m[2*i] >= 0 {
				l.ResetsAt, _ = ParseReset(lp.Clock, text[m[2*i]:m[2*i+1]], now)
			}
		}
	}
	return l, count, count > 0
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

var (
	zonedRe = regexp.MustCompile(`^(?:([A-Za-z]{3})\s+(\d{1,2}),?\s+)?(\d{1,2})(?::(\d{2}))?\s*((?i:[ap]m))\s*\(([^)]+)\)$`)
	localRe = regexp.MustCompile(`^(\d{1,2}):(\d{2})\s*([AaPp][Mm])$`)
)

// ParseReset reads a reset time as the clock prints it, the next such time at or after now less a minute (a
// minute-precision reset that has just passed is still that one, not tomorrow's). ok is false when s does not
// read; the caller backs off.
func ParseReset(clock ResetClock, s string, now time.Time) (time.Time, bool) {
	s = strings.TrimSpace(s)
	switch clock {
	case ClockRFC3339:
		t, err := time.Parse(time.RFC3339Nano, s)
		return t, err == nil
	case ClockZoned:
		m := zonedRe.FindStringSubmatch(s)
		if m == nil {
			return time.Time{}, false
		}
		loc, err := time.LoadLocation(m[6])
		if err != nil {
			return time.Time{}, false
		}
		var month time.Month
		day := 0
		if m[1] != "" {
			mt, err := time.Parse("Jan", strings.ToUpper(m[1][:1])+strings.ToLower(m[1][1:]))
			if err != nil {
				return time.Time{}, false
			}
			month = mt.Month()
			day, _ = strconv.Atoi(m[2])
		}
		h, _ := strconv.Atoi(m[3])
		mi, _ := strconv.Atoi(m[4])
		return nextClock(now.In(loc), month, day, h12(h, strings.ToLower(m[5])), mi)
	case ClockLocal:
		m := localRe.FindStringSubmatch(s)
		if m == nil {
			return time.Time{}, false
		}
		h, _ := strconv.Atoi(m[1])
		mi, _ := strconv.Atoi(m[2])
		return nextClock(now.In(time.Local), 0, 0, h12(h, strings.ToLower(m[3])), mi)
	}
	return time.Time{}, false
}

// h12 reads a 12-hour clock's hour; 25 (never valid) for an hour no 12-hour clock shows.
func h12(h int, ampm string) int {
	if h < 1 || h > 12 {
		return 25
	}
	h %= 12
	if ampm == "pm" {
		h += 12
	}
	return h
}

// nextClock is the first hh:mm (on month/day when given) at or after now less a minute, in now's zone.
func nextClock(now time.Time, month time.Month, day, h, mi int) (time.Time, bool) {
	if h > 23 || mi > 59 {
		return time.Time{}, false
	}
	floor := now.Add(-time.Minute)
	if month != 0 {
		t := time.Date(now.Year(), month, day, h, mi, 0, 0, now.Location())
		if t.Before(floor) {
			t = t.AddDate(1, 0, 0)
		}
		return t, true
	}
	t := time.Date(now.Year(), now.Month(), now.Day(), h, mi, 0, 0, now.Location())
	if t.Before(floor) {
		t = t.AddDate(0, 0, 1)
	}
	return t, true
}
