package runbox

import (
	"fmt"
	"strings"

	"github.com/aceworks/ace/pkg/store"
)

// Line says how the run's agent is boxed and what its proxy saw, for ace show and the dashboard; "" when the
// run's agent never started.
func Line(r *store.Run) string {
	b := r.State.Box
	switch {
	case b == nil:
		return ""
	case b.Proxy == "" && b.Unboxed != "":
		return "unboxed: " + b.Unboxed
	case b.Proxy == "":
		return "off (the agent runs on the host)"
	}
	line := "boxed"
	if b.Refused > 0 {
		line += "; " + refusedText(b)
	}
	if b.Unreachable > 0 {
		line += "; " + unreachableText(b)
	}
	if b.Blocked > 0 {
		line += "; " + blockedText(b)
	}
	if b.FilesUnrecorded != "" {
		line += "; file attempts not all recorded: " + b.FilesUnrecorded
	}
	if n := len(b.Reached); n > 0 {
		line += fmt.Sprintf("; reached %s", listSome(b.Reached, 5))
	}
	return line
}

// StatusRow is the status comment's row when the run's proxy refused something, or its box kept the agent
// from a path: a human should know that the agent tried, and may need to allow a destination.
func StatusRow(r *store.Run) string {
	b := r.State.Box
	if b == nil || (b.Refused == 0 && b.Blocked == 0 && b.Unreachable == 0) {
		return ""
	}
	var what []string
	hint := ""
	if b.Refused > 0 {
		what, hint = append(what, refusedText(b)), "; allow with [sandbox] allow"
	}
	if b.Unreachable > 0 {
		what = append(what, unreachableText(b))
	}
	if b.Blocked > 0 {
		what = append(what, blockedText(b))
	}
	return fmt.Sprintf("| sandbox | %s (`ace show %d`%s) |\n", strings.Join(what, "; "), r.Issue, hint)
}

// blockedText counts the file attempts the box kept the agent from and names the first paths, each in a code
// span whose text cannot end it or the table's cell (the agent chose the path).
func blockedText(b *store.BoxState) string {
	quoted := make([]string, len(b.BlockedAt))
	for i, p := range b.BlockedAt {
		quoted[i] = "`" + strings.NewReplacer("`", "'", "|", "\\|").Replace(p) + "`"
	}
	s := fmt.Sprintf("kept the agent from %d file attempt", b.Blocked)
	if b.Blocked != 1 {
		s += "s"
	}
	if len(quoted) == 0 {
		return s
	}
	return s + " at " + listSome(quoted, maxBlockedAt)
}

func refusedText(b *store.BoxState) string {
	return countTo("refused", b.Refused, b.RefusedTo)
}

// unreachableText counts the connections the proxy let out but could not make, and names where.
func unreachableText(b *store.BoxState) string {
	return countTo("could not make", b.Unreachable, b.UnreachableTo)
}

// countTo is "<verb> n connection(s) to `a`, `b`".
func countTo(verb string, n int, dests []string) string {
	quoted := make([]string, len(dests))
	for i, d := range dests {
		quoted[i] = "`" + d + "`" // host:port, as the proxy validated it: no backtick in it
	}
	return fmt.Sprintf("%s %d %s to %s", verb, n, plural(n, "connection", "connections"), listSome(quoted, maxRefusedTo))
}

// listSome joins the first n items, and says how many more there are.
func listSome(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:n], ", "), len(items)-n)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
