package workflow

import (
	"fmt"
	"strings"

	"github.com/aceworks/ace/pkg/runbox"
	"github.com/aceworks/ace/pkg/store"
)

// reachHint says what would mend the run's agent not reaching its model: what the proxy's failure says, else
// where the destination comes from.
func reachHint(st *store.ReachState) string {
	if st.Dest == "" {
		return "Is the model's endpoint up and reachable from this machine? `ace doctor` checks each agent's."
	}
	h := runbox.UnreachableHint(st.Dest, st.Error)
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
