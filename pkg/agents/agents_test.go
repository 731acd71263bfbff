package agents

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFixturesClassify(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "screens", "*", "*.txt"))
	if len(files) < 12 {
		t.Fatalf("only %d fixtures", len(files))
	}
	for _, f := range files {
		agent := filepath.Base(filepath.Dir(f))
		want := State(strings.SplitN(filepath.Base(f), "-", 2)[0])
		p, ok := Builtin(agent)
		if !ok {
			t.Fatalf("no profile %s", agent)
		}
		b, _ := os.ReadFile(f)
		if got := p.Classify(string(b), false, 0); got != want {
			t.Errorf("%s: %s, want %s", f, got, want)
		}
	}
	p, _ := Builtin("claude")
	if p.Classify("", true, 0) != StateExited || p.Classify("", true, 2) != StateCrashed {
		t.Error("dead panes")
	}
}

func TestArgvKeepsValuesWhole(t *testing.T) {
	p := Profile{Name: "mine", Command: `my-agent --task {task_file} --title "{repo} #{issue}" --model {model}`}
	argv, err := p.Argv(Vars{TaskFile: "/w/ACE_TASK.md", Repo: `o/r $(rm -rf /) "q"`, Issue: 3})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"my-agent", "--task", "/w/ACE_TASK.md", "--title", `o/r $(rm -rf /) "q" #3`}
	if strings.Join(argv, "\x00") != strings.Join(want, "\x00") {
		t.Fatalf("argv %q, want %q (no model: --model dropped)", argv, want)
	}
	argv, _ = p.Argv(Vars{Model: "big model"})
	if argv[len(argv)-1] != "big model" {
		t.Fatalf("model with a space split: %q", argv)
	}
}

func TestResolveOverridesAndErrors(t *testing.T) {
	p, err := Resolve("claude", Override{Model: "opus", AutoApprove: true, Markers: MarkerOverride{Ready: `READY>`}})
	if err != nil || p.Model != "opus" || !p.AutoApprove || !p.IsReady("READY> ") {
		t.Fatalf("%+v %v", p, err)
	}
	if _, err := Resolve("claude", Override{Markers: MarkerOverride{Busy: "("}}); err == nil || !strings.Contains(err.Error(), "markers.busy") {
		t.Fatalf("bad regex: %v", err)
	}
	if _, err := Resolve("mine", Override{}); err == nil {
		t.Fatal("a custom agent without a command was accepted")
	}
}

func TestDialogsAndPermissions(t *testing.T) {
	p, _ := Builtin("claude")
	trust, _ := os.ReadFile("testdata/screens/claude/dialog-1.txt")
	if name, answer, ok := dialogAnswer(p, string(trust)); !ok || name != "trust" || answer != "Yes, I trust this folder" {
		t.Fatalf("trust: %q %s %v", answer, name, ok)
	}
	perm, _ := os.ReadFile("testdata/screens/claude/approval-1.txt")
	if _, _, ok := dialogAnswer(p, string(perm)); ok {
		t.Fatal("a permission dialog was answered without auto_approve")
	}
	p.AutoApprove = true
	if _, answer, ok := dialogAnswer(p, string(perm)); !ok || answer != "Yes" {
		t.Fatalf("auto_approve answered the permission dialog with %q", answer)
	}
}

func TestPrepareHome(t *testing.T) {
	root, work := t.TempDir(), "/w/acme/widgets/7"
	for _, name := range []string{"claude", "codex", "gemini"} {
		p, _ := Builtin(name)
		env, err := PrepareHome(p, root, work, MCPConfig{GitHubURL: "http://127.0.0.1/mcp", GitHubTokenEnv: "GITHUB_TOKEN"}, Auth{})
		if err != nil || len(env) != 1 {
			t.Fatalf("%s: %v %v", name, env, err)
		}
		_ = filepath.Walk(filepath.Join(root, "homes", name), func(path string, fi os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			want := os.FileMode(0o600)
			if fi.IsDir() {
				want = 0o700
			}
			if fi.Mode().Perm() != want {
				t.Errorf("%s: mode %v, want %v", path, fi.Mode().Perm(), want)
			}
			if b, _ := os.ReadFile(path); !fi.IsDir() && filepath.Base(path) != "settings.json" && !strings.Contains(string(b), work) {
				t.Errorf("%s does not trust the working copy", path)
			}
			return nil
		})
	}
	if InstallHint("gemini") != "npm install -g @google/gemini-cli" {
		t.Error("install hint")
	}
}

// TestRealFirstRunDialogsAnswers: the real first-run screens get the option (or keys) AGENT-CLIS.md and the
// captures call for, and a screen in transition gets none, though it still shows the dialog it leaves.
func TestRealFirstRunDialogsAnswers(t *testing.T) {
	for _, tc := range []struct {
		agent, file string
		answer      string
	}{
		{"codex", "dialog-real-signin.txt", "Sign in another way"},
		{"codex", "dialog-real-apikey.txt", "Enter"},
		{"codex", "dialog-real-trust.txt", "Trust and continue"},
		{"claude", "dialog-real-trust.txt", "Yes, I trust this folder"},
		{"claude", "dialog-real-apikey.txt", "Yes"},
		{"gemini", "dialog-real-trust.txt", "Trust folder (project)"},
		{"gemini", "starting-real-restarting.txt", ""},
	} {
		p, _ := Builtin(tc.agent)
		b, err := os.ReadFile(filepath.Join("testdata", "screens", tc.agent, tc.file))
		if err != nil {
			t.Fatal(err)
		}
		name, answer, ok := dialogAnswer(p, string(b))
		if answer != tc.answer || ok != (tc.answer != "") {
			t.Errorf("%s/%s: answered %q (%s, %v), want %q", tc.agent, tc.file, answer, name, ok, tc.answer)
		}
	}
}

// TestMCPConfigNamesTheTokenVariable: a GitHub MCP server lands where each agent reads it — codex's and gemini's
// isolated homes, claude's working copy — with the token variable's name, never a token.
func TestMCPConfigNamesTheTokenVariable(t *testing.T) {
	root, work := t.TempDir(), t.TempDir()
	mcp := MCPConfig{GitHubURL: "http://127.0.0.1:9/mcp/", GitHubTokenEnv: "GITHUB_TOKEN"}
	files := map[string][]string{
		"codex":  {filepath.Join(root, "homes", "codex", ".codex", "config.toml"), `bearer_token_env_var = "GITHUB_TOKEN"`},
		"gemini": {filepath.Join(root, "homes", "gemini", ".gemini", "settings.json"), `"Authorization": "Bearer $GITHUB_TOKEN"`},
		"claude": {filepath.Join(work, ".mcp.json"), `"Authorization": "Bearer ${GITHUB_TOKEN}"`},
	}
	for name, want := range files {
		p, _ := Builtin(name)
		if _, err := PrepareHome(p, root, work, mcp, Auth{}); err != nil {
			t.Fatal(err)
		}
		if err := WriteProjectMCP(p, work, mcp); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(want[0])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !strings.Contains(string(b), mcp.GitHubURL) || !strings.Contains(string(b), want[1]) {
			t.Errorf("%s: %s lacks the server or %s:\n%s", name, want[0], want[1], b)
		}
	}
	// Writing again keeps the user's other servers.
	p, _ := Builtin("claude")
	path := filepath.Join(work, ".mcp.json")
	if err := os.WriteFile(path, []byte(`{"mcpServers":{"mine":{"command":"x"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteProjectMCP(p, work, mcp); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), `"mine"`) || !strings.Contains(string(b), `"github"`) {
		t.Errorf(".mcp.json after a second write: %s", b)
	}
}

func TestHeadlessArgv(t *testing.T) {
	v := Vars{Model: "m1", Workdir: "/w", AceBin: "/ace/bin"}
	cases := []struct {
		agent, first, resume string
	}{
		{"claude", "claude -p --output-format stream-json --verbose --permission-mode acceptEdits --allowedTools Bash(git add:*) Bash(git commit:*) Bash(git status:*) Bash(git diff:*) Bash(git log:*) --model m1",
			"claude -p --resume S1 --output-format stream-json --verbose --permission-mode acceptEdits --allowedTools Bash(git add:*) Bash(git commit:*) Bash(git status:*) Bash(git diff:*) Bash(git log:*) --model m1"},
		{"codex", `/ace/bin/codex-gh exec --json --sandbox workspace-write -c sandbox_workspace_write.writable_roots=["/w/.git"] --model m1 -`,
			`/ace/bin/codex-gh exec --json --sandbox workspace-write -c sandbox_workspace_write.writable_roots=["/w/.git"] --model m1 resume S1 -`},
		{"gemini", "gemini -p|Do what the text above asks.|--skip-trust --output-format stream-json --approval-mode yolo --model m1",
			"gemini --resume S1 -p|Do what the text above asks.|--skip-trust --output-format stream-json --approval-mode yolo --model m1"},
	}
	join := func(a []string) string {
		s := strings.Join(a, " ")
		return strings.Replace(s, " Do what the text above asks. ", "|Do what the text above asks.|", 1)
	}
	for _, c := range cases {
		p, err := Resolve(c.agent, Override{Runner: "exec"})
		if err != nil {
			t.Fatal(err)
		}
		if p.Runner != "exec" || p.HeadlessFormat != c.agent {
			t.Errorf("%s: runner %q format %q", c.agent, p.Runner, p.HeadlessFormat)
		}
		first, err := p.HeadlessArgv(v)
		if err != nil || join(first) != c.first {
			t.Errorf("%s first turn: %q, %v\nwant %q", c.agent, join(first), err, c.first)
		}
		rv := v
		rv.SessionID = "S1"
		resume, err := p.HeadlessArgv(rv)
		if err != nil || join(resume) != c.resume {
			t.Errorf("%s resume: %q, %v\nwant %q", c.agent, join(resume), err, c.resume)
		}
	}
	if _, err := (Profile{Name: "x", Headless: "x"}).HeadlessArgv(Vars{SessionID: "S"}); err == nil {
		t.Error("resuming without a resume template succeeded")
	}
}

// TestSubmittedNeedsAKnownScreen: a prompt counts as submitted when the screen after Enter shows a state (busy,
// ready, a dialog) or lost the prompt, not when it merely changed: gemini keeps an unsent prompt in its composer
// with no marker at all (a real screen from CI, where ace took it for submitted and the run stalled).
func TestSubmittedNeedsAKnownScreen(t *testing.T) {
	p, _ := Builtin("gemini")
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("testdata", "screens", "gemini", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	prompt := "Read ACE_TASK.md in this folder: it describes issue #193 of acme/widgets"
	before, unsent, busy := read("ready-real-composer.txt"), read("starting-real-unsent-prompt.txt"), read("busy-real-thinking.txt")
	if p.Submitted(before, unsent, prompt) {
		t.Error("an unsent prompt in the composer counted as submitted")
	}
	if !p.Submitted(unsent, busy, prompt) {
		t.Error("a thinking agent did not count as submitted")
	}
	if p.Submitted(busy, busy, prompt) {
		t.Error("an unchanged screen counted as submitted")
	}
	// A screen ace does not know, without the prompt at the bottom: the prompt went somewhere (the old rule).
	if !p.Submitted(unsent, "some splash of a newer gemini\n", prompt) {
		t.Error("an unknown screen without the prompt did not count as submitted")
	}
}

// TestSubmittedSeesALongPasteUnsent: a prompt long enough that gemini draws it as a placeholder is not submitted
// while the placeholder is still in the composer, however the screen changed (a real screen from a loaded run,
// where the Enter was lost and ace, not finding the prompt's beginning, took the changed screen for submitted).
func TestSubmittedSeesALongPasteUnsent(t *testing.T) {
	p, _ := Builtin("gemini")
	b, err := os.ReadFile(filepath.Join("testdata", "screens", "gemini", "starting-real-unsent-paste.txt"))
	if err != nil {
		t.Fatal(err)
	}
	unsent := string(b)
	// For a moment after a long paste gemini shows how to expand it; then the hint goes.
	hinted := strings.Replace(unsent, " Shift+Tab to accept edits", " Press Ctrl+O to expand pasted text", 1)
	prompt := strings.Repeat("Read ACE_TASK.md in this folder: it describes issue #193 of acme/widgets. ", 7)
	if !p.ShowsPaste(hinted, prompt) {
		t.Fatal("the placeholder does not show the paste")
	}
	if p.Submitted(hinted, unsent, prompt) {
		t.Error("a long paste still in the composer counted as submitted")
	}
	if !p.Submitted(unsent, strings.Replace(unsent, "[Pasted Text: 529 chars]", "", 1)+"\n ⠧ Thinking... (esc to cancel, 1s)", prompt) {
		t.Error("a thinking agent did not count as submitted")
	}
}

// TestSubmittedWaitsOutAResume: gemini resuming a conversation draws its composer before the session is back; a
// long paste taken then is unsent while gemini blanks the screen and redraws the history (real screens from a
// loaded run, where ace took the blank screen for a submitted prompt and the round's prompt sat in the composer).
func TestSubmittedWaitsOutAResume(t *testing.T) {
	p, _ := Builtin("gemini")
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("testdata", "screens", "gemini", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	prompt := strings.Repeat("You were restarted after an interruption; your earlier work is committed. ", 7)
	pasted, resuming := read("starting-real-resume-pasted.txt"), read("starting-real-resuming-session.txt")
	if !p.ShowsPaste(pasted, prompt) {
		t.Fatal("the placeholder does not show the paste")
	}
	for name, after := range map[string]string{"blank": "", "resuming": resuming} {
		if p.Submitted(pasted, after, prompt) {
			t.Errorf("a long paste counted as submitted on the %s screen of a resume", name)
		}
	}
}

// TestShowsPaste: the prompt's beginning at the bottom, or the CLI's placeholder for a long paste, shows the
// paste; a prompt starting with what terminals draw differently is not looked for; an unknown command is
// taken at its word.
func TestShowsPaste(t *testing.T) {
	claude, _ := Builtin("claude")
	prompt := "Read ACE_TASK.md in this folder: it describes issue #193"
	ready := "╭────╮\n❯ \n? for shortcuts\n"
	if claude.ShowsPaste(ready, prompt) {
		t.Error("an empty composer shows the paste")
	}
	if !claude.ShowsPaste("❯ Read ACE_TASK.md in this folder: it desc\n", prompt) {
		t.Error("the prompt in the composer is not the paste")
	}
	if !claude.ShowsPaste("❯ [Pasted text #1 +40 lines]\n", prompt) {
		t.Error("claude's placeholder is not the paste")
	}
	if !claude.ShowsPaste(ready, "ünïcödé answer") || !claude.ShowsPaste(ready, "ok") {
		t.Error("a prompt with no plain beginning was looked for")
	}
	if !(Profile{Name: "mine"}).ShowsPaste("", prompt) {
		t.Error("a command without markers was not taken at its word")
	}
}
