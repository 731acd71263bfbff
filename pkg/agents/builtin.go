package agents

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Builtin returns a built-in profile: claude, codex, gemini, or fake (ace's scripted test agent).
func Builtin(name string) (Profile, bool) {
	re := regexp.MustCompile
	switch name {
	case "claude":
		return Profile{
			Name: "claude", Command: "claude --model {model}", Model: "sonnet",
			Markers: Markers{Ready: re(`\? for shortcuts`), Busy: re(`esc to interrupt`),
				Approval: re(`Do you want to (proceed|create|make|edit|overwrite)`), Question: re(`Enter to select`)},
			Dialogs: []Dialog{
				{Name: "trust", Match: re(`Is this a project you created or one you trust|Yes, I trust this folder`), Keys: []string{"Enter"}},
				{Name: "api-key", Match: re(`Do you want to use this API key\?`), Keys: []string{"1"}},
				{Name: "permission", Match: re(`Do you want to (proceed|create|make|edit|overwrite)`), Keys: []string{"1"}, Permission: true},
			},
			ApproveKeys: []string{"1"}, CompactCommand: "/compact", ContextFile: "CLAUDE.md",
			// -p without a prompt argument reads the prompt from stdin. Nobody is there to answer a permission
			// prompt: edits are accepted, other tools follow the user's settings (or override headless with
			// --dangerously-skip-permissions inside a sandbox).
			Headless:       "claude -p --output-format stream-json --verbose --permission-mode acceptEdits --model {model}",
			HeadlessResume: "claude -p --resume {session_id} --output-format stream-json --verbose --permission-mode acceptEdits --model {model}",
			HeadlessFormat: "claude",
			InstallHint:    InstallHint("claude"), Secrets: []string{"ANTHROPIC_API_KEY"},
		}, true
	case "codex":
		return Profile{
			Name: "codex", Command: "{ace_bin}/codex-gh --model {model} --sandbox workspace-write --ask-for-approval on-request",
			Markers: Markers{Ready: re(`default · |Worked for`),
				// A prompt submitted while codex is still connecting is queued, not lost: pasting it again would
				// queue it twice.
				Busy:     re(`esc to interrupt|Queued follow-up inputs|edit last queued message`),
				Approval: re(`Would you like to run the following command\?|Press enter to confirm or esc to cancel`),
				Question: re(`Enter to select`)},
			Dialogs: []Dialog{
				{Name: "trust", Match: re(`Trust this folder\?|trust the files in this folder`), Keys: []string{"Enter"}},
				// A fresh CODEX_HOME asks how to sign in, even with OPENAI_API_KEY set: "Sign in another way" (3),
				// "Use an OpenAI API key" (Enter), then save the detected key (Enter). Checked most specific first.
				{Name: "api-key", Match: re(`Detected OPENAI_API_KEY environment variable`), Keys: []string{"Enter"}},
				{Name: "sign-in-method", Match: re(`Use an OpenAI API key`), Keys: []string{"Enter"}},
				{Name: "sign-in", Match: re(`Sign in with ChatGPT`), Keys: []string{"3"}},
				{Name: "model-notice", Match: re(`Use existing model`), Keys: []string{"2"}},
				{Name: "approval", Match: re(`Would you like to run the following command\?`), Keys: []string{"y"}, Permission: true},
			},
			ApproveKeys: []string{"y"}, CompactCommand: "/compact", ContextFile: "AGENTS.md",
			// "-" reads the prompt from stdin; exec defaults to a read-only sandbox, so ask for workspace-write
			// (.git stays read-only there: ace commits what the agent leaves).
			Headless:       "{ace_bin}/codex-gh exec --json --sandbox workspace-write --model {model} -",
			HeadlessResume: "{ace_bin}/codex-gh exec --json --sandbox workspace-write --model {model} resume {session_id} -",
			HeadlessFormat: "codex",
			InstallHint:    InstallHint("codex"), Secrets: []string{"OPENAI_API_KEY"},
		}, true
	case "gemini":
		return Profile{
			Name: "gemini", Command: "gemini --model {model}",
			Markers: Markers{Ready: re(`Type your message or @path/to/file`), Busy: re(`esc to cancel`),
				Starting: re(`Gemini CLI is restarting`),
				Approval: re(`Apply this change\?|Allow execution of`), Question: re(`Enter to select`)},
			Dialogs: []Dialog{
				{Name: "trust", Match: re(`Do you trust the files in this folder\?`), Keys: []string{"Enter"}},
				{Name: "approval", Match: re(`Apply this change\?|Allow execution of`), Keys: []string{"1"}, Permission: true},
			},
			ApproveKeys: []string{"1"}, CompactCommand: "/compress", ContextFile: "GEMINI.md",
			// -p makes gemini headless and is appended to the prompt read from stdin, so it only points back at it.
			Headless:       "gemini -p \"Do what the text above asks.\" --output-format stream-json --approval-mode yolo --model {model}",
			HeadlessResume: "gemini --resume {session_id} -p \"Do what the text above asks.\" --output-format stream-json --approval-mode yolo --model {model}",
			HeadlessFormat: "gemini",
			InstallHint:    InstallHint("gemini"), Secrets: []string{"GEMINI_API_KEY"},
		}, true
	case "fake":
		return Profile{
			Name: "fake", Command: "ace demo-agent",
			Markers: Markers{Ready: re(`\? for shortcuts`), Busy: re(`esc to interrupt`),
				Approval: re(`Do you want to proceed\?`), Question: re(`Enter to select`)},
			Dialogs: []Dialog{
				{Name: "trust", Match: re(`Trust this folder\?`), Keys: []string{"Enter"}},
				{Name: "permission", Match: re(`Do you want to proceed\?`), Keys: []string{"1"}, Permission: true},
			},
			ApproveKeys: []string{"1"}, CompactCommand: "/compact",
		}, true
	}
	return Profile{}, false
}

// MarkerOverride holds regex strings from ace.toml; empty keeps the built-in marker.
type MarkerOverride struct {
	Ready, Busy, Approval, Question, Dialog, Starting string
}

// Override is [agents.<name>] from ace.toml; empty fields keep the built-in values.
type Override struct {
	Command, Model, Home, Nudge, CompactCommand, Headless, HeadlessResume, HeadlessFormat, Runner string
	GitHubMCP, ContextFile                                                                        string
	Markers                                                                                       MarkerOverride
	AutoApprove                                                                                   *bool
	Env                                                                                           map[string]string
	Secrets                                                                                       []string
}

// Resolve lays o over the built-in profile name; an agent that is not built in needs a command.
func Resolve(name string, o Override) (Profile, error) {
	p, ok := Builtin(name)
	if !ok {
		if strings.TrimSpace(o.Command) == "" {
			return Profile{}, fmt.Errorf("unknown agent %q: give it a command in [agents.%s] (built in: claude, codex, gemini)", name, name)
		}
		p = Profile{Name: name}
	}
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&p.Command, o.Command)
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
		re, err := regexp.Compile(pair.src)
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

// BuiltinNames lists the built-in agents.
func BuiltinNames() []string {
	n := []string{"claude", "codex", "gemini", "fake"}
	sort.Strings(n)
	return n
}
