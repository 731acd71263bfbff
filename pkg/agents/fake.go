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
			dialog("trust", `Trust this folder\?`, "Enter"),
			permission("permission", `Do you want to proceed\?`, "1"),
		},
		ApproveKeys: []string{"1"}, CompactCommand: "/compact",
	}
}
