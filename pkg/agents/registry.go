// Package agents describes coding-agent CLIs as ace drives them: how to start them (argv templates, no shell),
// how to read their screens (markers → states), which first-run dialogs to answer, and how to give them an
// isolated home. Markers are regexes over the visible screen, built in per agent and overridable in ace.toml,
// because the CLIs' wording moves between versions.
//
// Each built-in agent lives in a folder of its own (claude, codex, gemini), which holds everything ace knows of
// that CLI as an agent.Adapter; adapters lists them, and everything else asks the list. Adding an agent is
// adding a folder and a line there. The types an agent is described in (Profile, Markers, Dialog, …) live in
// package agent, which the folders import; they are named here too, so that the rest of ace needs only this
// package.
package agents

import (
	"fmt"
	"sort"
	"strings"

	"github.com/aceworks/ace/pkg/agents/agent"
	"github.com/aceworks/ace/pkg/agents/claude"
	"github.com/aceworks/ace/pkg/agents/codex"
	"github.com/aceworks/ace/pkg/agents/gemini"
	"github.com/aceworks/ace/pkg/headless"
	"github.com/aceworks/ace/pkg/store"
)

// adapters lists the built-in agents; each call builds them afresh, so nothing here is shared mutable state.
func adapters() []*Adapter {
	return []*Adapter{claude.Adapter(), codex.Adapter(), gemini.Adapter(), fakeAdapter()}
}

// AdapterOf is the built-in agent name's adapter: everything ace knows of its CLI.
func AdapterOf(name string) (*Adapter, bool) {
	a := adapterFor(name)
	return a, a != nil
}

func adapterFor(name string) *Adapter {
	for _, a := range adapters() {
		if a.Name == name {
			return a
		}
	}
	return nil
}

// Builtin returns a built-in profile: claude, codex, gemini, or fake (ace's scripted test agent).
func Builtin(name string) (Profile, bool) {
	a := adapterFor(name)
	if a == nil {
		return Profile{}, false
	}
	return a.Profile(), true
}

// BuiltinNames lists the built-in agents, sorted.
func BuiltinNames() []string {
	var n []string
	for _, a := range adapters() {
		n = append(n, a.Name)
	}
	sort.Strings(n)
	return n
}

// InstallHint returns the command that installs the named executable, or "" when ace does not know how it is
// installed. doctor and the runners print it when the executable is missing.
func InstallHint(executable string) string {
	switch executable {
	case "tmux":
		return "apt-get install tmux   (or: brew install tmux)"
	case "git":
		return "apt-get install git    (or: brew install git)"
	}
	for _, a := range adapters() {
		if a.Package != "" && (executable == a.CLI || executable == a.Wrapper) {
			return "npm install -g " + a.Package
		}
	}
	return ""
}

// Parsers are the headless stream parsers of the built-in agents, by the format their profiles name
// (agents.<name>.headless_format). pkg/headless knows no agent: whoever reads a stream passes these in.
func Parsers() headless.Parsers {
	ps := headless.Parsers{}
	for _, a := range adapters() {
		if a.Parser != nil {
			ps[a.Base().HeadlessFormat] = a.Parser
		}
	}
	return ps
}

// ContextImport is the line with which a context file named file makes the CLI that reads it read path too
// ("@path" in CLAUDE.md and GEMINI.md), or "" when that CLI's context file imports nothing. It goes by the
// file's name, whichever agent reads it: the CLI whose file it is decides its syntax (ace's fake agent told to
// read CLAUDE.md gets claude's).
func ContextImport(file, path string) string {
	for _, a := range adapters() {
		if a.ContextImport != "" && a.Base().ContextFile == file {
			return a.ContextImport + path
		}
	}
	return ""
}

func errUnknown(name string) error {
	var builtin []string
	for _, a := range adapters() {
		if !a.Internal {
			builtin = append(builtin, a.Name)
		}
	}
	return fmt.Errorf("unknown agent %q: give it a command in [agents.%s] (or runner = %q with headless and headless_format; built in: %s)",
		name, name, store.RunnerExec, strings.Join(builtin, ", "))
}

// The types of package agent, which the agents' folders fill, under the names the rest of ace knows them by.
type (
	Profile      = agent.Profile
	Adapter      = agent.Adapter
	Vars         = agent.Vars
	Markers      = agent.Markers
	Dialog       = agent.Dialog
	State        = agent.State
	UserEnv      = agent.UserEnv
	Auth         = agent.Auth
	MCPConfig    = agent.MCPConfig
	Limit        = agent.Limit
	VersionCache = agent.VersionCache
	Usage        = agent.Usage
	Endpoint     = agent.Endpoint
	Retry        = agent.Retry
)

// Agent states, from the screen and the pane (see agent.State).
const (
	StateStarting = agent.StateStarting
	StateReady    = agent.StateReady
	StateBusy     = agent.StateBusy
	StateApproval = agent.StateApproval
	StateQuestion = agent.StateQuestion
	StateDialog   = agent.StateDialog
	StateExited   = agent.StateExited
	StateCrashed  = agent.StateCrashed
)

// ErrNoSessionUsage: the agent's CLI keeps no session files ace can read (a custom agent, the fake agent).
var ErrNoSessionUsage = agent.ErrNoSessionUsage

// CurrentUser is the environment ace runs in.
func CurrentUser() UserEnv { return agent.CurrentUser() }

// GitIdentity is the git author and committer variables for the identity git finds in workdir.
func GitIdentity(workdir string) map[string]string { return agent.GitIdentity(workdir) }

// CompareVersions orders two dotted versions number by number (agent.CompareVersions).
func CompareVersions(a, b string) int { return agent.CompareVersions(a, b) }
