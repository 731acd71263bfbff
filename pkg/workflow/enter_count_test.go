package workflow

import (
	"testing"

	"github.com/aceworks/ace/pkg/agents"
)

// TestEnterCountOneWhereASecondResubmits: gemini takes an Enter by the screen it last drew, so the second Enter of
// tmux.enter_count, pressed before it redrew, submitted an answer twice on a loaded machine; it gets one, the
// others what the configuration says — as resolved for a run, whatever the user's [agents.gemini] overrides.
func TestEnterCountOneWhereASecondResubmits(t *testing.T) {
	for name, want := range map[string]int{"gemini": 1, "claude": 2, "codex": 2} {
		p, err := agents.Resolve(name, agents.Override{Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		if got := enterCount(2, p); got != want {
			t.Errorf("%s: %d Enters at first, want %d", name, got, want)
		}
	}
}
