package livehost

import (
	"testing"

	"github.com/aceworks/ace/pkg/live"
)

func TestPick(t *testing.T) {
	colours := live.Ask{Options: []string{"Red", "Dark blue"}}
	many := live.Ask{Options: []string{"Lint", "Test", "Build"}, Multi: true}
	for _, tc := range []struct {
		ask    live.Ask
		answer string
		option int
		text   string
	}{
		{colours, "2", 1, "Dark blue"},
		{colours, " dark BLUE ", 1, "Dark blue"},
		{colours, "3", -1, "3"},
		{colours, "Red, please", -1, "Red, please"},
		{colours, "", -1, ""},
		{many, "1, 3", -1, "Lint, Build"},
		{many, "test,build", -1, "Test, Build"},
		{many, "test, and more", -1, "test, and more"},
		{many, "2", 1, "Test"},
	} {
		if got := pick(tc.ask, tc.answer); got != (choice{tc.option, tc.text}) {
			t.Errorf("pick(%v, %q) = %+v, want option %d %q", tc.ask.Options, tc.answer, got, tc.option, tc.text)
		}
	}
}

func TestYesNo(t *testing.T) {
	for _, tc := range []struct {
		line      string
		allow, ok bool
		reason    string
	}{
		{"y", true, true, ""},
		{" Yes ", true, true, ""},
		{"yes, but", false, false, ""},
		{"n", false, true, ""},
		{"No. Use IN.txt instead", false, true, "Use IN.txt instead"},
		{"nope", false, false, ""},
		{"maybe", false, false, ""},
	} {
		allow, reason, ok := yesNo(tc.line)
		if allow != tc.allow || reason != tc.reason || ok != tc.ok {
			t.Errorf("yesNo(%q) = %v %q %v, want %v %q %v", tc.line, allow, reason, ok, tc.allow, tc.reason, tc.ok)
		}
	}
}
