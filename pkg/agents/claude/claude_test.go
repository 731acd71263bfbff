package claude

import (
	"strings"
	"testing"

	"github.com/aceworks/ace/pkg/agents/agent"
)

// TestAsksWithoutAutoApprove: without auto_approve claude starts in its default permission mode, so that each
// permission reaches a human (2.1.331's own default, auto mode, decides by itself); with it, or when the user's
// command runs a wrapper, the command is left as it is.
func TestAsksWithoutAutoApprove(t *testing.T) {
	for _, c := range []struct {
		name string
		set  func(p *agent.Profile)
		want string
	}{
		{"default", func(*agent.Profile) {}, "claude --model sonnet --permission-mode default"},
		{"auto_approve", func(p *agent.Profile) { p.AutoApprove = true }, "claude --model sonnet"},
		{"wrapper", func(p *agent.Profile) { p.Command = "my-claude-wrapper --model {model}" }, "my-claude-wrapper --model sonnet"},
	} {
		p := Adapter().Profile()
		c.set(&p)
		argv, err := p.Argv(agent.Vars{Model: p.Model})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(argv, " "); got != c.want {
			t.Errorf("%s: argv %q, want %q", c.name, got, c.want)
		}
	}
}
