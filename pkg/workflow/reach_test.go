package workflow

import (
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/store"
)

// TestReachLines: what ace show, the dashboard and the status comment say of an agent that cannot reach its
// model — where, how often its CLI retried (or how many connections failed), what was said, since when, and what
// would mend it — and nothing while it can.
func TestReachLines(t *testing.T) {
	t.Parallel()
	since := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	r := &store.Run{Agent: "claude", State: store.RunState{Reach: &store.ReachState{Since: since, Retries: 7, Max: 10,
		Dest: "127.0.0.1:4000", Error: "Unable to connect to API (ConnectionRefused)"}}}
	r.State.Reach.Hint = reachHint(r.State.Reach)
	if got := ReachLine(r); got != "claude cannot reach its model (127.0.0.1:4000, 7 retries): Unable to connect to API (ConnectionRefused)" {
		t.Errorf("ReachLine = %q", got)
	}
	if got := ReachHelp(r); !strings.Contains(got, "(since ") || !strings.Contains(got, ". Nothing answers on this machine's 127.0.0.1:4000") {
		t.Errorf("ReachHelp = %q", got)
	}
	r.State.Reach = &store.ReachState{Since: since, Failed: 3, Dest: "127.0.0.1:4000", From: "ANTHROPIC_BASE_URL",
		Error: "dial tcp 127.0.0.1:4000: connect: connection refused | evil"}
	r.State.Reach.Hint = reachHint(r.State.Reach)
	row := reachRow(r)
	for _, want := range []string{"| model | claude cannot reach its model (127.0.0.1:4000, 3 failed connections)",
		"refused \\| evil", "since 2026-11-28T09:00:00Z", "Nothing answers on this machine's 127.0.0.1:4000",
		"(ANTHROPIC_BASE_URL names it.)"} {
		if !strings.Contains(row, want) {
			t.Errorf("status row lacks %q:\n%s", want, row)
		}
	}
	if strings.Count(row, "|") != 4 {
		t.Errorf("the row's cell was broken by the error's text: %s", row)
	}
	r.State.Reach = nil
	if ReachLine(r) != "" || ReachHelp(r) != "" || reachRow(r) != "" {
		t.Error("a run that reaches its model says it cannot")
	}
}
