package eval

import (
	"slices"
	"strings"
	"testing"
)

// TestPlanKeepsItsNumbers: an item keeps its number when the plan is read again and when items are added (more
// agents, more runs); a plan file that is not one is an error naming it.
func TestPlanKeepsItsNumbers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p, err := LoadPlan(dir)
	if err != nil {
		t.Fatal(err)
	}
	a, b := p.Add("t1", "claude", 1), p.Add("t1", "codex@0.171.0", 1)
	if a.N != 1 || b.N != 2 || p.Add("t1", "claude", 1).N != 1 {
		t.Fatalf("numbers %d %d", a.N, b.N)
	}
	if err := p.Save(); err != nil {
		t.Fatal(err)
	}
	q, err := LoadPlan(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c := q.Add("t0", "gemini", 2); c.N != 3 || q.Add("t1", "codex@0.171.0", 1).N != 2 {
		t.Errorf("after reloading: new item %d", c.N)
	}
	if it, ok := q.Item(2); !ok || it.Key() != "t1/codex@0.171.0/1" {
		t.Errorf("item 2 is %+v", it)
	}
	if _, ok := q.Item(4); ok {
		t.Error("item 4 exists")
	}
	writeFiles(t, dir, map[string]string{"plan.json": `[{"n": 2, "instance_id": "t", "agent": "a", "run": 1}]`})
	if _, err := LoadPlan(dir); err == nil || !strings.Contains(err.Error(), "plan.json") {
		t.Errorf("a plan numbered wrong: %v", err)
	}
}

// TestParseAgents: names with an optional release; an empty name or release, a name twice, nothing: errors.
func TestParseAgents(t *testing.T) {
	t.Parallel()
	got, err := ParseAgents(" claude, codex@0.171.0 ,gemini,claude@2.1.332")
	if err != nil || !slices.Equal(got, []AgentSpec{{"claude", ""}, {"codex", "0.171.0"}, {"gemini", ""}, {"claude", "2.1.332"}}) {
		t.Fatalf("%v, %v", got, err)
	}
	for _, bad := range []string{"", ",", "claude@", "@1.0", "claude,claude", "a/b", "c@1@2"} {
		if _, err := ParseAgents(bad); err == nil {
			t.Errorf("ParseAgents(%q) accepted", bad)
		}
	}
}
