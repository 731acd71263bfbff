package workflow

import (
	"fmt"
	"net"
	"strings"

	"github.com/aceworks/ace/pkg/store"
)

// What would mend a destination the agent cannot reach, said from the destination and the error: the words a
// user needs next to the failure (the event, the status comment, the question on the issue, ace doctor).

// unreachableHint says what would mend a destination the box's proxy, or a probe, could not connect to; "" when
// the error says nothing ace can help with.
func unreachableHint(dest, err string) string {
	e := strings.ToLower(err)
	host, _, _ := net.SplitHostPort(dest)
	switch {
	case strings.Contains(e, "not on the allow list") || strings.Contains(e, "403"):
		return fmt.Sprintf("to allow it, add to ace.toml: [sandbox] allow = [%q]", dest)
	case loopbackPort(dest) != 0 && (strings.Contains(e, "refused") || strings.Contains(e, "reset")):
		return fmt.Sprintf("nothing answers on this machine's %s: is its server (your gateway, your local model) running?", dest)
	case strings.Contains(e, "no such host") || strings.Contains(e, "server misbehaving") ||
		strings.Contains(e, "lookup ") && strings.Contains(e, "network is unreachable"):
		return fmt.Sprintf("%s does not resolve on this machine: check the name, or this machine's DNS", host)
	case strings.Contains(e, "refused"):
		return fmt.Sprintf("%s refuses the connection: is its server up?", dest)
	case strings.Contains(e, "timeout") || strings.Contains(e, "unreachable") || strings.Contains(e, "no route"):
		return fmt.Sprintf("this machine cannot reach %s: check its network (ace's proxy connects from this machine, "+
			"not through another proxy)", dest)
	}
	return ""
}

// reachHint says what would mend the run's agent not reaching its model: what the proxy's failure says, else
// where the destination comes from.
func reachHint(st *store.ReachState) string {
	if st.Dest == "" {
		return "Is the model's endpoint up and reachable from this machine? `ace doctor` checks each agent's."
	}
	h := unreachableHint(st.Dest, st.Error)
	if h == "" {
		h = fmt.Sprintf("Is %s up and reachable from this machine? `ace doctor` checks it, through the box as the agent's runs go.", st.Dest)
	}
	if st.From != "" {
		h += fmt.Sprintf(" (%s names it.)", st.From)
	}
	return capitalize(h)
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
