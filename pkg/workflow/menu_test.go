package workflow

import (
	"os"
	"testing"

	"github.com/aceworks/ace/pkg/agents"
)

// TestMenuOptions reads claude 2.1.197's AskUserQuestion menu as recorded end to end.
func TestMenuOptions(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../agents/testdata/screens/claude/question-real-ask.txt")
	if err != nil {
		t.Fatal(err)
	}
	opts, free := numbered(t, string(b))
	want := map[string]string{"1": "Formal", "2": "Casual", "3": "Type something.", "4": "Chat about this"}
	if len(opts) != len(want) || free != "3" {
		t.Fatalf("options %q, free-text option %q", opts, free)
	}
	for n, l := range want {
		if opts[n] != l {
			t.Errorf("option %s = %q, want %q", n, opts[n], l)
		}
	}
}

// TestMenuOptionsInABox reads gemini 0.61's permission dialog, drawn inside a box under the agent's earlier
// output — which holds a numbered list of its own (the task's "When you are done" steps).
func TestMenuOptionsInABox(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../agents/testdata/screens/gemini/approval-real-boxed.txt")
	if err != nil {
		t.Fatal(err)
	}
	opts, free := numbered(t, string(b))
	want := map[string]string{"1": "Allow once", "2": "Allow for this session", "3": "Modify with external editor",
		"4": "No, suggest changes (esc)"}
	if len(opts) != len(want) || free != "" {
		t.Fatalf("options %q, free-text option %q", opts, free)
	}
	for n, l := range want {
		if opts[n] != l {
			t.Errorf("option %s = %q, want %q", n, opts[n], l)
		}
	}
}

// numbered reads a screen's menu as the human's answer sees it: number → words, and the free-text option's number.
func numbered(t *testing.T, screen string) (map[string]string, string) {
	t.Helper()
	m, ok := agents.ParseMenu(screen)
	if !ok {
		t.Fatalf("no menu on screen:\n%s", screen)
	}
	opts := map[string]string{}
	for _, o := range m.Options {
		opts[o.Number] = o.Text
	}
	free := ""
	if i := m.FreeText(); i >= 0 {
		free = m.Options[i].Number
	}
	return opts, free
}
