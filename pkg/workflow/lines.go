package workflow

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/sanitize"
	"github.com/aceworks/ace/pkg/store"
)

// What ace says of a run in words, read from the stored run alone: the status comment's rows (status.go renders
// them in its table), the start of its pull request's body, and the lines ace show and the dashboard print. Each
// part keeps its state in the run; its words are here, below every part that says them, so a row never calls back
// into the part it describes. With them, the helpers that shape text for the issue and the agent: quote, fenced,
// flatten, cutAt.

// quote renders text as a Markdown code block that the text cannot break out of.
func quote(text string) string { return fenced("text", text) }

// fenced renders text as a Markdown code block of lang that the text cannot break out of.
func fenced(lang, text string) string {
	fence := "```"
	for strings.Contains(text, fence) {
		fence += "`"
	}
	return fence + lang + "\n" + strings.TrimRight(text, "\n") + "\n" + fence
}

// bestOfRow is the status comment's row of a best-of parent: how many attempts and why, and the one chosen.
func bestOfRow(r *store.Run) string {
	bo := r.State.BestOf
	if bo == nil {
		return ""
	}
	s := fmt.Sprintf("%d attempts (%s)", bo.N, bo.Why)
	if bo.Winner > 0 && bo.Winner <= len(bo.Results) {
		s += fmt.Sprintf("; attempt %d chosen: %s", bo.Winner, resultLine(bo.Results[bo.Winner-1]))
	}
	return "| best of | " + s + " |\n"
}

// resultLine says how an attempt came out, in one line.
func resultLine(res store.AttemptResult) string {
	s := fmt.Sprintf("%s, verify %s, %d line(s) in %d file(s)", res.Status, orDash(res.Verify), res.Lines, res.Files)
	if res.Usage != nil {
		s += ", " + spent(res.Usage.CostUSD, res.Usage.Tokens())
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// handoversLine says, for the status comment, which agents the run went through and why: "fake → fake2 (usage
// limit until 2025-06-01T12:00:00Z)"; "" when it never fell back.
func handoversLine(r *store.Run) string {
	if r.State.Fallback == nil {
		return ""
	}
	var parts []string
	for _, h := range r.State.Fallback.Handovers {
		parts = append(parts, fmt.Sprintf("%s → %s (usage limit until %s)", h.From, h.To, h.Until.UTC().Format(time.RFC3339)))
	}
	return strings.Join(parts, "; ")
}

// UsageLine renders a run's usage for people: "12.3k tokens (10k in, 2.3k out, 40k cached) · $0.0123".
func UsageLine(u *store.Usage) string {
	if u == nil {
		return ""
	}
	return fmt.Sprintf("%s tokens (%s in, %s out, %s cache read, %s cache write) · $%.4f", kilo(u.Tokens()),
		kilo(u.InputTokens), kilo(u.OutputTokens), kilo(u.CacheReadTokens), kilo(u.CacheWriteTokens), u.CostUSD)
}

func kilo(n int64) string {
	if n < 1000 {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%.1fk", float64(n)/1000)
}

func spent(cost float64, tokens int64) string {
	return fmt.Sprintf("$%.2f, %s tokens", cost, kilo(tokens))
}

// budgetLine renders a budget times n (a run's budget after n-1 grants).
func budgetLine(b config.Budget, n int) string {
	var parts []string
	if b.MaxCostUSD > 0 {
		parts = append(parts, fmt.Sprintf("$%.2f", b.MaxCostUSD*float64(n)))
	}
	if b.MaxTokens > 0 {
		parts = append(parts, kilo(b.MaxTokens*int64(n))+" tokens")
	}
	switch len(parts) {
	case 2:
		return parts[0] + " or " + parts[1]
	case 1:
		return parts[0]
	}
	return "none"
}

// refusedFilesRow is the status comment's row of the files ace refused: a human should know the agent left
// them. Each path and finding is the agent's doing, so each refusal is a code span it cannot end.
func refusedFilesRow(r *store.Run) string {
	if len(r.State.Refused) == 0 {
		return ""
	}
	quoted := make([]string, len(r.State.Refused))
	for i, l := range r.State.Refused {
		quoted[i] = "`" + strings.NewReplacer("`", "'", "|", "\\|", "\n", " ").Replace(l) + "`"
	}
	return fmt.Sprintf("| files | %s (`ace show %d`) |\n", listSome(quoted, 5), r.Issue)
}

// listSome joins the first n items, and says how many more there are.
func listSome(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:n], ", "), len(items)-n)
}

// ReachLine says that the run's agent cannot reach its model, where and how often it tried, and what was said of
// it last: "claude cannot reach its model (127.0.0.1:4000, 7 retries): Connection refused"; "" while it can.
func ReachLine(r *store.Run) string {
	st := r.State.Reach
	if st == nil {
		return ""
	}
	var what []string
	if st.Dest != "" {
		what = append(what, st.Dest)
	}
	switch {
	case st.Retries > 0:
		what = append(what, strconv.Itoa(st.Retries)+" "+plural(st.Retries, "retry", "retries"))
	case st.Failed > 0:
		what = append(what, strconv.Itoa(st.Failed)+" "+plural(st.Failed, "failed connection", "failed connections"))
	}
	s := r.Agent + " cannot reach its model"
	if len(what) > 0 {
		s += " (" + strings.Join(what, ", ") + ")"
	}
	if st.Error != "" {
		s += ": " + st.Error
	}
	return s
}

// ReachHelp is ReachLine with since when and what would mend it, for ace show and the dashboard.
func ReachHelp(r *store.Run) string {
	if r.State.Reach == nil {
		return ""
	}
	return reachHelp(r, r.State.Reach.Since.Local().Format(time.DateTime))
}

// reachRow is the status comment's row while the agent cannot reach its model.
func reachRow(r *store.Run) string {
	if r.State.Reach == nil {
		return ""
	}
	help := reachHelp(r, r.State.Reach.Since.UTC().Format(time.RFC3339))
	return fmt.Sprintf("| model | %s |\n", strings.NewReplacer("|", "\\|", "\n", " ").Replace(help))
}

func reachHelp(r *store.Run, since string) string {
	s := ReachLine(r) + " (since " + since + ")"
	if h := r.State.Reach.Hint; h != "" {
		s += ". " + h
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// flatten makes untrusted text one sanitized line of at most n bytes.
func flatten(s string, n int) string {
	s = strings.Join(strings.Fields(sanitize.Clean(s)), " ")
	if len(s) <= n {
		return s
	}
	return cutAt(s, n) + "…"
}

// cutAt is s in at most n bytes, never splitting a rune.
func cutAt(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// joinMessages is text after what was queued before it, each as it was given.
func joinMessages(queued, text string) string {
	switch {
	case queued == "":
		return text
	case text == "":
		return queued
	}
	return queued + "\n\n" + text
}

// verifyReport is the pull request's line about verify ("" when the repository has none).
func verifyReport(r *store.Run) (line string, failed bool) {
	st := r.State.Workflow
	switch {
	case st == nil || st.VerifiedHead == "":
		return "", false
	case st.VerifyPassed:
		return fmt.Sprintf("Verified: `%s` passed", st.VerifyCommand), false
	default:
		return fmt.Sprintf("**Not verified**: %s after %d round(s) of fixes; this pull request is a draft until a human looks.",
			st.VerifyFailure, st.VerifyRounds), true
	}
}

// prIntro is the start of a pull request's body: the issue it closes, the agent's summary, verify's line.
func prIntro(b *strings.Builder, r *store.Run) {
	fmt.Fprintf(b, "Closes #%d\n\n", r.Issue)
	if s := r.State.Summary; s != "" {
		b.WriteString("## Summary (from the agent)\n\n" + s + "\n\n")
	}
	if line, _ := verifyReport(r); line != "" {
		b.WriteString(line + "\n\n")
	}
}

// RefusedLine says which files of the run's working copy or home ace refused, for ace show and the dashboard.
func RefusedLine(r *store.Run) string {
	return strings.Join(r.State.Refused, "; ")
}
