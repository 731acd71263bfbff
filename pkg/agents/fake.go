package agents

import (
	"regexp"

	"github.com/aceworks/ace/pkg/agents/agent"
	"github.com/aceworks/ace/pkg/agents/claude"
)

// fakeAdapter is ace's scripted test agent (`ace demo-agent`, pkg/fakeagent): built into ace, no sign-in.
func fakeAdapter() *Adapter {
	return &Adapter{Name: "fake", Internal: true, Base: fakeProfile, Limits: fakeLimits()}
}

func fakeProfile() Profile {
	re := regexp.MustCompile
	return Profile{
		Command: "ace demo-agent",
		Markers: Markers{Ready: re(`\? for shortcuts`), Busy: re(`esc to interrupt`),
			Approval: re(`Do you want to proceed\?`), Question: re(`Enter to select`),
			// As claude 2.1.332 stops a turn behind a gateway (Markers.Stopped); its prompts are echoed "› …".
			Stopped: re(`(?m)^Stopped by the CLI: `), Entry: re(`(?m)^(› \S|Stopped by the CLI: )`)},
		Dialogs: []Dialog{
			agent.Choose("trust", `Trust this folder\?`, `^Trust and continue`),
			agent.Permission("permission", `Do you want to proceed\?`, `^Yes$`),
			agent.Confirm("notice", `(?s)Notice: .*Enter to continue`, "Enter"),
		},
		Approve: regexp.MustCompile(`^Yes$`), ComposerStays: true, CompactCommand: "/compact",
	}
}

// fakeLimits are claude's, which the fake agent imitates, and its own message that says when exactly, so
// that tests need not wait for a minute to turn.
func fakeLimits() agent.LimitPatterns {
	own := regexp.MustCompile(`Usage limit reached · resets at (?P<reset>\S+)`)
	c := claude.Adapter().Limits
	return agent.LimitPatterns{
		Screen: append([]*regexp.Regexp{own}, c.Screen...),
		Menus:  c.Menus,
		Stream: append([]*regexp.Regexp{own}, c.Stream...),
		Clock:  agent.ClockRFC3339,
	}
}
