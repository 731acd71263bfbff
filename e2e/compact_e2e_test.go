package e2e_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// TestAgentIsAskedToCompactOnlyWhenIdle: the first turn prints far past the threshold and then stays busy;
// only when it is idle at its prompt does ace type /compact, once. The turn /compact starts does the work.
// (The transcript is written through head's stdio buffer, in 4 KiB blocks: wide lines make every repaint of the
// fake agent's screen large enough to pass the threshold well within the first turn.)
func TestAgentIsAskedToCompactOnlyWhenIdle(t *testing.T) {
	t.Parallel()
	script := `sh printf '%0200d\n' $(seq 1 60)
busy 1500ms
idle
busy 300ms
write GREETING.md Hello from the fake agent!\n
sh git add GREETING.md && git commit -q -m "Add GREETING.md"
done Added GREETING.md with a greeting.
`
	w := newWorld(t, script, func(c *config.Config) { c.Monitor.CompactThreshold = 8 << 10 })
	r := w.run(workflow.UntilSettled)
	if r.Status != store.StatusDone {
		t.Fatalf("run ended %s at %s: %s", r.Status, r.Step, r.Error)
	}
	p := w.prompts()
	if len(p) != 2 || p[1] != "/compact" {
		t.Fatalf("prompts %q, want the task then /compact once", p)
	}
	for _, rec := range w.records() {
		if rec.DuringTurn {
			t.Errorf("%q reached the agent while it was busy", rec.Prompt)
		}
	}
	compactions := 0
	for _, ev := range w.progress() {
		if ev.Kind == "compact" {
			compactions++
		}
	}
	if compactions != 1 {
		t.Errorf("%d compact events, want 1", compactions)
	}
	// The offset of the last compaction is in the stored run, so a restarted ace counts from it.
	stored, err := w.svc.Store.GetRun(context.Background(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !stored.State.HasCompactAt || stored.State.CompactAt == 0 {
		t.Errorf("stored compaction offset = %d (recorded: %v)", stored.State.CompactAt, stored.State.HasCompactAt)
	}
}

func TestNoCompactionBelowTheThreshold(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "sh seq 1 40\nidle\n"+workScript, func(c *config.Config) {
		c.Monitor.IdleAfter = config.Duration{Duration: 1500 * 1e6}
	})
	r := w.run(workflow.UntilSettled)
	if r.Status != store.StatusDone {
		t.Fatalf("run ended %s at %s: %s", r.Status, r.Step, r.Error)
	}
	for _, p := range w.prompts() {
		if p == "/compact" {
			t.Fatalf("compacted below the default threshold: prompts %q", w.prompts())
		}
	}
}

type promptRecord struct {
	Prompt     string `json:"prompt"`
	DuringTurn bool   `json:"during_turn"`
}

// records are the fake agent's prompt records with their flags.
func (w *world) records() []promptRecord {
	w.t.Helper()
	b, err := os.ReadFile(w.recordPath())
	if err != nil {
		w.t.Fatal(err)
	}
	var out []promptRecord
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var rec promptRecord
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			w.t.Fatalf("record %q: %v", line, err)
		}
		out = append(out, rec)
	}
	return out
}
