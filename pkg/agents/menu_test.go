package agents

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestParseMenuRealScreens reads the menus of real captures: the options in order, the selected one, and the
// option each built-in dialog wants found by its meaning, wherever the release put it.
func TestParseMenuRealScreens(t *testing.T) {
	for _, c := range []struct {
		file     string
		options  []string
		selected int
		want     string // a regex the wanted option matches; "" for none
		wantAt   int
		question string // what the menu asks, when the test says
	}{
		{"real/claude-2.1.197/01-trust.txt", []string{"Yes, I trust this folder", "No, exit"}, 0, "trust", 0, ""},
		{"real/claude-2.1.331/01-trust.txt", []string{"No, exit", "Yes, I trust this folder"}, 0, "trust", 1, ""},
		{"real/claude-2.1.197/02-api-key.txt", []string{"Yes", "No (recommended)"}, 1, "api-key", 0, ""},
		{"real/codex-0.169.0/02-sign-in.txt", []string{"Sign in with ChatGPT", "Sign in with Device Code", "Sign in another way"}, 0, "sign-in", 2, ""},
		{"real/codex-0.169.0/05-trust.txt", []string{"Trust and continue", "Back to Agent Command Center"}, 0, "trust", 0, ""},
		{"real/gemini-0.61.0/01-trust.txt", []string{"Trust folder (project)", "Trust parent folder (user)", "Don't trust"}, 0, "trust", 0, ""},
		{"real/gemini-0.61.0/02-auth-method.txt", []string{"Sign in with Google", "Use Gemini API Key", "Vertex AI"}, 1, "auth-method", 1, ""},
		{"real/claude-2.1.332/43-approval-no-first.txt", []string{"No", "Yes"}, 0, "permission", 1, ""},
		{"screens/claude/question-real-ask.txt", []string{"Formal", "Casual", "Type something.", "Chat about this"}, 0, "", -1,
			"Should the greeting be formal or casual?"},
	} {
		t.Run(c.file, func(t *testing.T) {
			screen, err := os.ReadFile(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			m, ok := ParseMenu(string(screen))
			if !ok {
				t.Fatalf("no menu in\n%s", screen)
			}
			var texts []string
			for _, o := range m.Options {
				texts = append(texts, o.Text)
			}
			if !slices.Equal(texts, c.options) || m.Selected != c.selected {
				t.Fatalf("options %q selected %d, want %q selected %d", texts, m.Selected, c.options, c.selected)
			}
			if c.question != "" && m.Question != c.question {
				t.Errorf("question %q, want %q", m.Question, c.question)
			}
			if c.want == "" {
				return
			}
			cli := filepath.Base(filepath.Dir(c.file))
			name, _, _ := strings.Cut(cli, "-")
			p, _ := Builtin(name)
			i := slices.IndexFunc(p.Dialogs, func(d Dialog) bool { return d.Name == c.want })
			if i < 0 {
				t.Fatalf("%s has no dialog %s", p.Name, c.want)
			}
			if got := m.Find(p.Dialogs[i].Choose); got != c.wantAt {
				t.Errorf("dialog %s wants option %d, found %d", c.want, c.wantAt, got)
			}
		})
	}
}

// TestMenuAnswers: a number or an option's words pick it; other words go to the free-text option.
func TestMenuAnswers(t *testing.T) {
	screen, err := os.ReadFile(filepath.Join("testdata", "screens", "claude", "question-real-ask.txt"))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := ParseMenu(string(screen))
	for answer, want := range map[string]int{"2": 1, "casual": 1, "Formal.": 0, "Formal, please: \"Good day.\"": -1, "9": -1} {
		if got := m.Choose(answer); got != want {
			t.Errorf("Choose(%q) = %d, want %d", answer, got, want)
		}
	}
	if m.FreeText() != 2 || !slices.Equal(m.Moves(2), []string{"Down", "Down"}) {
		t.Errorf("free text at %d, moves %v", m.FreeText(), m.Moves(2))
	}
	if got := m.Describe(); got != "1. Formal (selected)\n2. Casual\n3. Type something.\n4. Chat about this\n" {
		t.Errorf("Describe = %q", got)
	}
	if _, ok := ParseMenu("❯ \n  ? for shortcuts\n"); ok {
		t.Error("an empty composer is not a menu")
	}
	custom := "Pick a colour\n  1. Red\n> 2. Blue\n"
	if m, ok := ParseMenu(custom); !ok || m.Selected != 1 || m.Find(regexp.MustCompile(`^Red$`)) != 0 || !slices.Equal(m.Moves(0), []string{"Up"}) {
		t.Errorf("custom menu: %+v %v", m, ok)
	}
}

// TestClassifyFromTheBottomUp: a custom agent that leaves its output on screen is ready once it draws its prompt
// below a line that matched its busy marker, and busy while the busy line is the lowest.
func TestClassifyFromTheBottomUp(t *testing.T) {
	p, err := Resolve("mine", Override{Command: "my-agent", Markers: MarkerOverride{Ready: `^READY>`, Busy: `working`}})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Classify("READY> go\nworking on it (1)\nworking on it (2)\nall done\nREADY>\n", false, 0); got != StateReady {
		t.Errorf("output left on screen above the prompt: %s, want ready", got)
	}
	if got := p.Classify("READY> go\nworking on it (1)\n", false, 0); got != StateBusy {
		t.Errorf("a working agent: %s, want busy", got)
	}
	claude, _ := Builtin("claude")
	busy, _ := os.ReadFile(filepath.Join("testdata", "screens", "claude", "busy-1.txt"))
	if got := claude.Classify(string(busy), false, 0); got != StateBusy {
		t.Errorf("claude working above its composer: %s, want busy", got)
	}
}

// TestMenuBesideAPanel: claude 2.1.332 draws a panel of changed files right of its permission prompt; the
// options are the words left of its border.
func TestMenuBesideAPanel(t *testing.T) {
	screen := " Do you want to proceed?                         │\n" +
		" ❯ No                                            │GREETING.md (untracked)\n" +
		"   Yes                                           │New file not yet staged.\n" +
		"                                                 │\n" +
		" Esc to cancel · Tab to amend                    │\n"
	m, ok := ParseMenu(screen)
	if !ok || len(m.Options) != 2 || m.Options[0].Text != "No" || m.Options[1].Text != "Yes" || m.Selected != 0 {
		t.Fatalf("menu %+v (%v), want No (selected) and Yes", m, ok)
	}
	if m.Question != "Do you want to proceed?" {
		t.Errorf("question %q", m.Question)
	}
}

// TestNoMenuInClaudesTranscript: claude draws ● in front of each entry of its transcript; lines under such an
// entry at its indentation are no menu (2.1.332's notice after a call it did not run, read as a menu of four
// "options", had ace move a cursor over it).
func TestNoMenuInClaudesTranscript(t *testing.T) {
	screen, err := os.ReadFile(filepath.Join("testdata", "real", "claude-2.1.332", "42-interrupted-by-check.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := ParseMenu(string(screen)); ok {
		t.Fatalf("a menu read from a transcript:\n%s", m.Describe())
	}
}

// TestTurnStoppedByClaude: claude 2.1.332's notice after a call its safety check could not judge, as the last
// entry of its transcript, is a stopped turn; the dialog before it is not, nor the notice once a message
// followed it.
func TestTurnStoppedByClaude(t *testing.T) {
	p, _ := Builtin("claude")
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("testdata", "real", "claude-2.1.332", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	stopped := read("42-interrupted-by-check.txt")
	if !p.TurnStopped(stopped) {
		t.Error("the notice as the last entry: not a stopped turn")
	}
	if p.Classify(stopped, false, 0) != StateReady {
		t.Errorf("the stopped turn classified %s, want ready", p.Classify(stopped, false, 0))
	}
	if p.TurnStopped(read("41-auto-mode-check.txt")) {
		t.Error("the dialog taken for a stopped turn")
	}
	i := strings.LastIndex(stopped, "\n────")
	i = strings.LastIndex(stopped[:i], "\n────") // the rule above the composer
	followed := stopped[:i] + "\n❯ please continue\n" + stopped[i:]
	if p.TurnStopped(followed) {
		t.Error("the notice with a message after it taken for a stopped turn")
	}
}
