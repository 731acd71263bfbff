package workflow

import (
	"fmt"
	"strings"

	"github.com/aceworks/ace/pkg/store"
)

// SandboxLine says how the run's agent is boxed and what its proxy saw, for ace show and the dashboard; "" when
// the run's agent never started.
func SandboxLine(r *store.Run) string {
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
	if n := len(b.Reached); n > 0 {
		line += fmt.Sprintf("; reached %s", listSome(b.Reached, 5))
	}
	return line
}

// refusedLine is the status comment's row when the run's proxy refused something: a human should know that
// the agent tried, and may need to allow it.
func refusedLine(r *store.Run) string {
	b := r.State.Box
	if b == nil || b.Refused == 0 {
		return ""
	}
	return fmt.Sprintf("| sandbox | %s (`ace show %d`; allow with [sandbox] allow) |\n", refusedText(b), r.Issue)
}

func refusedText(b *store.BoxState) string {
	quoted := make([]string, len(b.RefusedTo))
	for i, d := range b.RefusedTo {
		quoted[i] = "`" + d + "`" // host:port, as the proxy validated it: no backtick in it
	}
	s := fmt.Sprintf("refused %d connection", b.Refused)
	if b.Refused != 1 {
		s += "s"
	}
	return s + " to " + listSome(quoted, maxRefusedTo)
}

// listSome joins the first n items, and says how many more there are.
func listSome(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:n], ", "), len(items)-n)
}
