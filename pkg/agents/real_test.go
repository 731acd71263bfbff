package agents

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRealFirstRunScreens walks each CLI's real first-run screens (testdata/real/<cli>-<version>/, captured in
// tmux on a fresh HOME with only an API key, loopback only; see testdata/real/README.md) through its adapter:
// each screen classifies as what it is, and a dialog gets exactly the keys that pass it. Every capture must be
// in the table, and the directory of each adapter's tested version must exist.
func TestRealFirstRunScreens(t *testing.T) {
	type want struct {
		state  State
		dialog string
		answer string // the option ace chooses, or the keys of a dialog without options
	}
	table := map[string]map[string]want{
		"claude": {
			"01-trust":       {StateDialog, "trust", "Yes, I trust this folder"},
			"02-api-key":     {StateDialog, "api-key", "Yes"},
			"03-ready":       {StateReady, "", ""},
			"11-oauth-trust": {StateDialog, "trust", "Yes, I trust this folder"}, // CLAUDE_CODE_OAUTH_TOKEN only: no api-key dialog
			"12-oauth-ready": {StateReady, "", ""},
			// 2.1.331 past the first run (recorded by ace agents check): the notice auto mode shows a gateway
			// user at the first checked tool call, and the 5-hour limit over an idle composer.
			"21-auto-mode-notice": {StateDialog, "auto-mode-notice", "Enter"},
			"31-limit":            {StateReady, "", ""},
			// 2.1.332 mid-turn, its safety check not getting through (recorded by ace agents check with
			// CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC, as a gateway user has it): without auto_approve a
			// permission for the human; with it, a dialog ace answers (TestAutoModeCheckStaysInAutoMode).
			"41-auto-mode-check": {StateApproval, "", ""},
			// Once it is answered (stay in auto mode), the action it could not check asks: "No" first and
			// preselected, without numbers; a stray Enter here says No. If the action was not run, the turn stops
			// with a notice as the transcript's last entry, over an idle composer (Markers.Stopped).
			"43-approval-no-first":    {StateApproval, "", ""},
			"42-interrupted-by-check": {StateReady, "", ""},
			// Its model unreachable (nothing on ANTHROPIC_BASE_URL's port): retrying, with its wait on the spinner line.
			"51-retry": {StateBusy, "", ""},
		},
		"codex": {
			"01-splash":         {StateStarting, "", ""},
			"02-sign-in":        {StateDialog, "sign-in", "Sign in another way"},
			"03-sign-in-method": {StateDialog, "sign-in-method", "Use an OpenAI API key"},
			"04-api-key":        {StateDialog, "api-key", "Enter"},
			"05-trust":          {StateDialog, "trust", "Trust and continue"},
			"06-ready":          {StateReady, "", ""},
			"51-retry":          {StateBusy, "", ""}, // its model unreachable: "Reconnecting... waiting for network"
		},
		"gemini": {
			"01-trust":       {StateDialog, "trust", "Trust folder (project)"},
			"02-auth-method": {StateDialog, "auth-method", "Use Gemini API Key"},
			"03-api-key":     {StateDialog, "api-key", "Enter"},
			"04-ready":       {StateReady, "", ""},
		},
	}
	for agent, screens := range table {
		p, _ := Builtin(agent)
		dir := filepath.Join("testdata", "real", agent+"-"+p.Adapter().Tested.Oldest)
		files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no captures of the tested version in %s (%v)", agent, dir, err)
		}
		if len(files) > len(screens) {
			t.Errorf("%s: %d captures, %d in the table: classify every capture", agent, len(files), len(screens))
		}
		// Later releases' captures, where they differ (claude 2.1.331's trust dialog, 2.1.332's auto-mode check),
		// hold the same.
		all, _ := filepath.Glob(filepath.Join("testdata", "real", agent+"-*", "*.txt"))
		for _, f := range all {
			if !strings.HasPrefix(f, dir+string(filepath.Separator)) {
				files = append(files, f)
			}
		}
		for _, f := range files {
			name := strings.TrimSuffix(filepath.Base(f), ".txt")
			w, ok := screens[name]
			if !ok {
				t.Errorf("%s: %s is not in the table", agent, f)
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Classify(string(b), false, 0); got != w.state {
				t.Errorf("%s: state %s, want %s", f, got, w.state)
			}
			dname, answer, ok := dialogAnswer(p, string(b))
			if dname != w.dialog || answer != w.answer || ok != (w.dialog != "") {
				t.Errorf("%s: dialog %q answered %q, want %q %q", f, dname, answer, w.dialog, w.answer)
			}
		}
	}
}

// TestAutoModeCheckStaysInAutoMode: claude 2.1.332's "Auto mode can't check actions in this session" is answered
// by staying in auto mode (Enter) only when ace auto-approves: each action then asks, and ace allows it.
func TestAutoModeCheckStaysInAutoMode(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "real", "claude-2.1.332", "41-auto-mode-check.txt"))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := Builtin("claude")
	p.AutoApprove = true
	if got := p.Classify(string(b), false, 0); got != StateDialog {
		t.Errorf("with auto_approve: state %s, want dialog", got)
	}
	if name, answer, ok := dialogAnswer(p, string(b)); !ok || name != "auto-mode-check" || answer != "Enter" {
		t.Errorf("with auto_approve: dialog %q answered %q (%v), want auto-mode-check Enter", name, answer, ok)
	}
}

// TestQuestionsAreNeverAnswered: a selection list the agent shows (claude's AskUserQuestion, codex's and
// gemini's lists) is a question for the human; no dialog of any profile answers it, even with auto_approve.
func TestQuestionsAreNeverAnswered(t *testing.T) {
	lists := map[string]string{
		"claude": "Which database should I use?\n\n❯ 1. PostgreSQL\n  2. SQLite\n  3. Type something.\n\nEnter to select · ↑/↓ to navigate · Esc to cancel",
		"codex":  "Which database should I use?\n\n› 1. PostgreSQL\n  2. SQLite\n\nPress Enter to select, Esc to cancel",
		"gemini": "│ Which database should I use?\n│ ● 1. PostgreSQL\n│   2. SQLite\n│ (Use Enter to select)",
	}
	for agent, screen := range lists {
		p, _ := Builtin(agent)
		p.AutoApprove = true
		if got := p.Classify(screen, false, 0); got != StateQuestion {
			t.Errorf("%s: a selection list classifies as %s, want question", agent, got)
		}
		if name, answer, ok := dialogAnswer(p, screen); ok {
			t.Errorf("%s: ace would answer the agent's question with %q (dialog %s)", agent, answer, name)
		}
	}
}

// TestDialogNamesAreStable: the engine answers a dialog once and then waits for the screen to change, keyed by
// the dialog's name: names are unique within a profile and never empty.
func TestDialogNamesAreStable(t *testing.T) {
	for _, agent := range BuiltinNames() {
		p, _ := Builtin(agent)
		seen := map[string]bool{}
		for _, d := range p.Dialogs {
			if d.Name == "" || seen[d.Name] || len(d.Keys) == 0 && d.Choose == nil {
				t.Errorf("%s: dialog %q is unnamed, named twice or answers nothing", agent, d.Name)
			}
			seen[d.Name] = true
		}
	}
}

// dialogAnswer is how ace answers the dialog on screen: the words of the option it chooses ("<missing>" when
// the menu has none that fits), or the keys of a dialog without options.
func dialogAnswer(p Profile, screen string) (name, answer string, ok bool) {
	d, ok := p.DialogOn(screen)
	if !ok {
		return "", "", false
	}
	if d.Choose == nil {
		return d.Name, strings.Join(d.Keys, " "), true
	}
	m, found := ParseMenu(screen)
	if i := m.Find(d.Choose); found && i >= 0 {
		return d.Name, m.Options[i].Text, true
	}
	return d.Name, "<missing>", true
}
