package agents

import "regexp"

// fakeAdapter is ace's scripted test agent (`ace demo-agent`, pkg/fakeagent): built into ace, no sign-in.
func fakeAdapter() *Adapter {
	return &Adapter{Name: "fake", Internal: true, base: fakeProfile}
}

func fakeProfile() Profile {
	re := regexp.MustCompile
	return Profile{
		Command: "ace demo-agent",
		Markers: Markers{Ready: re(`\? for shortcuts`), Busy: re(`esc to interrupt`),
			Approval: re(`Do you want to proceed\?`), Question: re(`Enter to select`)},
		Dialogs: []Dialog{
			choose("trust", `Trust this folder\?`, `^Trust and continue`),
			permission("permission", `Do you want to proceed\?`, `^Yes$`),
		},
		Approve: regexp.MustCompile(`^Yes$`), ComposerStays: true, CompactCommand: "/compact",
	}
}
