package agents

import (
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Adapter is everything ace knows about one agent CLI: one per agent, in <agent>.go. The rest of ace asks the
// profile (which carries its adapter) instead of switching on agent names; a custom agent from ace.toml has no
// adapter and gets the generic behaviour of each question.
type Adapter struct {
	Name string
	// base is the built-in profile: command templates, markers, first-run dialogs, context file, compact
	// command, headless command and the stream format that picks its parser (pkg/headless).
	base func() Profile
	// CLI is the program the agent runs; Wrapper is ace's own script in front of it (codex-gh), which the
	// command may start instead. doctor and the runners check that CLI is installed either way.
	CLI, Wrapper string
	// Package is the npm package that installs CLI.
	Package string
	// Tested is the range of `CLI --version` releases ace's real-CLI tests run (tools/agent-clis/{oldest,newest},
	// kept equal by TestTestedRangeIsPinned): doctor says whether the installed one is inside it.
	Tested VersionRange
	// SignIns are the CLI's ways to authenticate, in the order the CLI prefers them.
	SignIns []SignIn
	// configDir is where the CLI keeps its login and settings for a user whose home is home.
	configDir func(home string, getenv func(string) string) string
	// isolate fills an isolated home (see PrepareHome) and returns the variables pointing the CLI at it.
	isolate func(h isolatedHome) (map[string]string, error)
	// runEnv adds what every run of the CLI needs, whatever its home (see RunEnv); nil for none.
	runEnv func(root, workdir string) (map[string]string, error)
	// sessionUsage reads what the CLI's sessions spent from the files it keeps in its config dir (see
	// SessionUsage, usage_<name>.go); nil when ace reads none.
	sessionUsage sessionReader
	// Internal: the agent is part of ace itself (the fake agent): nothing to install or sign in to.
	Internal bool
	// ProjectMCP: the CLI reads MCP servers from <workdir>/.mcp.json (the others from their home).
	ProjectMCP bool
}

// adapters lists the built-in agents; each call builds them afresh, so nothing here is shared mutable state.
func adapters() []*Adapter {
	return []*Adapter{claudeAdapter(), codexAdapter(), geminiAdapter(), fakeAdapter()}
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
	p := a.base()
	p.Name, p.adapter = a.Name, a
	if a.Package != "" {
		p.InstallHint = "npm install -g " + a.Package
	}
	return p, true
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

// Adapter returns the profile's adapter, nil for a custom agent.
func (p Profile) Adapter() *Adapter { return p.adapter }

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

// WrappedCLI returns the CLI that the program exe stands in front of (codex for ace's codex-gh), or "" when
// exe is the agent's program itself. A custom command is never second-guessed: only the adapter's own wrapper
// names a CLI behind it.
func (p Profile) WrappedCLI(exe string) string {
	if a := p.adapter; a != nil && a.Wrapper != "" && filepath.Base(exe) == a.Wrapper {
		return a.CLI
	}
	return ""
}

// Program is the program the agent runs on its runner, as doctor checks and versions it: the command's
// executable (the headless command's for runner exec), or the CLI behind ace's wrapper.
func (p Profile) Program() string {
	exe := p.Executable()
	if p.Runner == "exec" {
		exe = p.HeadlessExecutable()
	}
	if cli := p.WrappedCLI(exe); cli != "" {
		return cli
	}
	return exe
}

// RunEnv returns the variables every run of the agent needs besides its home, preparing the files they name
// under root (ace's workspace root); nil for agents that need none.
func (p Profile) RunEnv(root, workdir string) (map[string]string, error) {
	if p.adapter == nil || p.adapter.runEnv == nil {
		return nil, nil
	}
	return p.adapter.runEnv(root, workdir)
}

// ReadsProjectMCP reports whether the agent reads MCP servers from the working copy (.mcp.json).
func (p Profile) ReadsProjectMCP() bool { return p.adapter != nil && p.adapter.ProjectMCP }

// choose, confirm and permission build an adapter's dialog table: a menu answered with the option whose words
// match option, a screen without options confirmed with keys, a permission prompt (answered with the profile's
// Approve option when it auto-approves).
func choose(name, match, option string) Dialog {
	return Dialog{Name: name, Match: regexp.MustCompile(match), Choose: regexp.MustCompile(option)}
}

func confirm(name, match string, keys ...string) Dialog {
	return Dialog{Name: name, Match: regexp.MustCompile(match), Keys: keys}
}

func permission(name, match, option string) Dialog {
	d := choose(name, match, option)
	d.Permission = true
	return d
}

// dialogNamed returns the profile's dialog called name.
func (p Profile) dialogNamed(name string) (Dialog, bool) {
	for _, d := range p.Dialogs {
		if d.Name == name {
			return d, true
		}
	}
	return Dialog{}, false
}

// versionRe finds a version number in `--version` output ("2.1.197 (Claude Code)", "codex-cli 0.169.0").
var versionRe = regexp.MustCompile(`\d+\.\d+\.\d+[0-9A-Za-z.+-]*`)

// ParseVersion extracts the version number from a CLI's --version output, "" when there is none.
func ParseVersion(out string) string { return versionRe.FindString(strings.TrimSpace(out)) }

func errUnknown(name string) error {
	return fmt.Errorf("unknown agent %q: give it a command in [agents.%s] (or runner = \"exec\" with headless and headless_format; built in: %s)",
		name, name, "claude, codex, gemini")
}
