package agents

import (
	"strings"
	"testing"
)

// TestReleaseRunsItsProgram: claude@2.1.331 with a program is the built-in claude whose every command starts that
// program (the path quoted where it needs it), the rest of each command as it was; the version checks the
// program; a user's wrapper command cannot run it, nor codex's (ace's codex-gh finds codex on PATH).
func TestReleaseRunsItsProgram(t *testing.T) {
	prog := "/root/clis/claude@2.1.331/node_modules/.bin/claude"
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
	if _, err := Resolve("codex@0.171.0", Override{Program: "/r/codex"}); err == nil {
		t.Error("codex, which runs through ace's codex-gh, was pointed at a release it would not run")
	}
	if _, err := Resolve("claude@2.1.331", Override{}); err == nil {
		t.Error("a release name without its program was taken for the built-in agent")
	}
}
