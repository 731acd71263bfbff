package serve

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/agentcheck"
)

// TestAgentChecksShown: the last `ace agents check` of each CLI version is on the API and the dashboard, with
// the steps that did not hold.
func TestAgentChecksShown(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, "active/monitor")
	for _, r := range []agentcheck.Result{
		{Agent: "claude", Version: "2.1.331", CheckedAt: time.Now().Add(-time.Hour), Reports: []agentcheck.Report{{Phase: "run",
			Steps: []agentcheck.Step{{Name: "start", OK: true}, {Name: "question", Detail: "the menu moved"}}}}},
		{Agent: "codex", Version: "0.169.0", CheckedAt: time.Now(), Reports: []agentcheck.Report{{Phase: "run",
			Steps: []agentcheck.Step{{Name: "start", OK: true}}}}},
	} {
		if err := agentcheck.Save(f.srv.o.Root, r); err != nil {
			t.Fatal(err)
		}
	}
	resp := f.do("GET", "/api/v1/agents/checks", "", nil)
	var got struct{ Checks []AgentCheck }
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || len(got.Checks) != 2 {
		t.Fatalf("checks: %+v %v", got, err)
	}
	if c := got.Checks[0]; c.Agent != "claude" || c.OK || len(c.Failed) != 1 || c.Failed[0].Name != "question" {
		t.Errorf("claude's check: %+v", c)
	}
	if c := got.Checks[1]; c.Agent != "codex" || !c.OK {
		t.Errorf("codex's check: %+v", c)
	}
	page := body(t, f.do("GET", "/", "", nil))
	for _, want := range []string{"<b>claude 2.1.331</b> failed · question", "<b>codex 0.169.0</b> held"} {
		if !strings.Contains(page, want) {
			t.Errorf("the dashboard lacks %q", want)
		}
	}
}
