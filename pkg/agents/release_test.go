package agents

import (
	"strings"
	"testing"
)

// TestReleaseRunsItsProgram: claude@2.1.331 with a program is the built-in claude whose every command starts that
// program (the path quoted where it needs it), the rest of each command as it was; the version checks the
// program; a user's wrapper command cannot run it.
func TestReleaseRunsItsProgram(t *testing.T) {
	prog := "/home/dev/.ace/clis/claude@2.1.331/node_modules/.bin/claude"
	p, err := Resolve("claude@2.1.331", Override{Program: prog, Model: "opus"})
	if err != nil {
		t.Fatal(err)
	}
	base, _ := Builtin("claude")
	for _, c := range []struct{ got, was string }{{p.Command, base.Command}, {p.ContinueCommand, base.ContinueCommand},
		{p.Live, base.Live}, {p.Headless, base.Headless}, {p.HeadlessResume, base.HeadlessResume}} {
		if c.got != prog+strings.TrimPrefix(c.was, "claude") {
			t.Errorf("command %q, want %q with %s", c.got, c.was, prog)
		}
	}
	argv, err := p.Argv(Vars{Model: "opus"})
	if err != nil || argv[0] != prog || p.Program() != prog || p.Adapter() == nil || p.Model != "opus" {
		t.Errorf("argv %q, program %q, adapter %v, model %q: %v", argv, p.Program(), p.Adapter(), p.Model, err)
	}
	spaced := "/my root/clis/it's/claude"
	if p, err := Resolve("claude@2.1.331", Override{Program: spaced}); err != nil || p.Program() != spaced {
		t.Errorf("a program with a space and a quote: %q, %v", p.Program(), err)
	}
	if _, err := Resolve("claude@2.1.331", Override{Program: prog, Command: "my-wrapper --model {model}", Headless: "my-wrapper -p"}); err == nil ||
		!strings.Contains(err.Error(), "does not start the CLI") {
		t.Errorf("a wrapper command: %v", err)
	}
	if _, err := Resolve("claude@2.1.331", Override{}); err == nil {
		t.Error("a release name without its program was taken for the built-in agent")
	}
	// Runner live starts the live command: the release runs there, whatever the tmux command it falls back to.
	live, err := Resolve("claude", Override{Program: prog, Runner: "live", Command: "my-wrapper --model {model}"})
	if err != nil || live.Program() != prog || live.Live != prog+strings.TrimPrefix(base.Live, "claude") || live.Command != "my-wrapper --model {model}" {
		t.Errorf("a live agent with its own tmux command: program %q, live %q, command %q: %v", live.Program(), live.Live, live.Command, err)
	}
}

// TestCodexReleaseRunsBehindItsWrapper: codex@0.171.0 with a program keeps starting ace's codex-gh (which hands
// codex its GitHub token) and tells it, in a plain variable of its env, to start the release instead of the codex
// on PATH; doctor's version check and the box (WrappedCLI) see the release; the user's env is kept beside it.
func TestCodexReleaseRunsBehindItsWrapper(t *testing.T) {
	prog := "/home/dev/.ace/clis/codex@0.171.0/node_modules/.bin/codex"
	p, err := Resolve("codex@0.171.0", Override{Program: prog, Env: map[string]string{"MINE": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	base, _ := Builtin("codex")
	if p.Command != base.Command || p.Headless != base.Headless || p.Live != base.Live {
		t.Errorf("codex's commands changed: %q, %q", p.Command, p.Headless)
	}
	if p.Env["ACE_CODEX_PROGRAM"] != prog || p.Env["MINE"] != "1" {
		t.Errorf("env %v, want ACE_CODEX_PROGRAM=%s beside MINE", p.Env, prog)
	}
	if p.Program() != prog || p.WrappedCLI("/ace/bin/codex-gh") != prog {
		t.Errorf("program %q, wrapped %q, want the release", p.Program(), p.WrappedCLI("/ace/bin/codex-gh"))
	}
	for _, runner := range []string{"exec", "live"} {
		if p, err := Resolve("codex@0.171.0", Override{Program: prog, Runner: runner}); err != nil || p.Program() != prog {
			t.Errorf("runner %s: program %q, %v", runner, p.Program(), err)
		}
	}
	if plain, _ := Builtin("codex"); plain.Program() != "codex" || plain.Env["ACE_CODEX_PROGRAM"] != "" {
		t.Errorf("the built-in codex: program %q, env %v", plain.Program(), plain.Env)
	}
	if _, err := Resolve("codex@0.171.0", Override{Program: prog, Command: "my-wrapper", Headless: "my-wrapper exec"}); err == nil {
		t.Error("a user's own codex wrapper was taken to run the release")
	}
}
