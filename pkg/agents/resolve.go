package agents

import (
	"fmt"
	"regexp"
	"strings"
)

// MarkerOverride holds regex strings from ace.toml; empty keeps the built-in marker.
type MarkerOverride struct {
	Ready, Busy, Approval, Question, Dialog, Starting string
}

// Override is [agents.<name>] from ace.toml; empty fields keep the built-in values.
type Override struct {
	Command, Model, Home, Nudge, CompactCommand, Headless, HeadlessResume, HeadlessFormat, Runner string
	GitHubMCP, ContextFile, ContinueCommand                                                       string
	Markers                                                                                       MarkerOverride
	AutoApprove                                                                                   *bool
	Env                                                                                           map[string]string
	Secrets                                                                                       []string
}

// Resolve lays o over the built-in profile name. An agent that is not built in lives in ace.toml alone: it
// needs a command for tmux, or, when it only runs headless, its headless command.
func Resolve(name string, o Override) (Profile, error) {
	p, ok := Builtin(name)
	if !ok {
		if strings.TrimSpace(o.Command) == "" && (o.Runner != "exec" || strings.TrimSpace(o.Headless) == "") {
			return Profile{}, errUnknown(name)
		}
		p = Profile{Name: name}
	}
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	if o.Command != "" && o.Command != p.Command && o.ContinueCommand == "" {
		// The user's own command (a wrapper) runs something ace does not know how to continue.
		p.ContinueCommand = ""
	}
	set(&p.Command, o.Command)
	set(&p.ContinueCommand, o.ContinueCommand)
	set(&p.Model, o.Model)
	set(&p.Home, o.Home)
	set(&p.Nudge, o.Nudge)
	set(&p.CompactCommand, o.CompactCommand)
	set(&p.ContextFile, o.ContextFile)
	set(&p.Headless, o.Headless)
	set(&p.HeadlessResume, o.HeadlessResume)
	set(&p.HeadlessFormat, o.HeadlessFormat)
	set(&p.Runner, o.Runner)
	set(&p.GitHubMCP, o.GitHubMCP)
	if p.Runner == "" {
		p.Runner = "tmux"
	}
	if o.AutoApprove != nil {
		p.AutoApprove = *o.AutoApprove
	}
	if o.Env != nil {
		p.Env = o.Env
	}
	if o.Secrets != nil {
		p.Secrets = o.Secrets
	}
	for key, pair := range map[string]struct {
		src string
		dst **regexp.Regexp
	}{"ready": {o.Markers.Ready, &p.Markers.Ready}, "busy": {o.Markers.Busy, &p.Markers.Busy},
		"approval": {o.Markers.Approval, &p.Markers.Approval}, "question": {o.Markers.Question, &p.Markers.Question},
		"starting": {o.Markers.Starting, &p.Markers.Starting}} {
		if pair.src == "" {
			continue
		}
		// Markers are read over a whole screen: ^ and $ mean a line's start and end, as a user writing
		// '^READY>' means.
		re, err := regexp.Compile("(?m)" + pair.src)
		if err != nil {
			return Profile{}, fmt.Errorf("markers.%s: %w", key, err)
		}
		*pair.dst = re
	}
	if o.Markers.Dialog != "" {
		re, err := regexp.Compile(o.Markers.Dialog)
		if err != nil {
			return Profile{}, fmt.Errorf("markers.dialog: %w", err)
		}
		p.Dialogs = append([]Dialog{{Name: "dialog", Match: re, Keys: []string{"Enter"}}}, p.Dialogs...)
	}
	return p, nil
}
