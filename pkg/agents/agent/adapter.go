package agent

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/headless"
	"github.com/aceworks/ace/pkg/live"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/untrusted"
)

// Adapter is everything ace knows about one agent CLI: one per agent, in its folder (pkg/agents/<name>). The
// rest of ace asks the profile (which carries its adapter) instead of switching on agent names; a custom agent
// from ace.toml has no adapter and gets the generic behaviour of each question.
type Adapter struct {
	Name string
	// Base is the built-in profile: command templates, markers, first-run dialogs, context file, compact
	// command, headless command and the stream format that names its parser (Parser).
	Base func() Profile
	// CLI is the program the agent runs; Wrapper is ace's own script in front of it (codex-gh), which the
	// command may start instead. doctor and the runners check that CLI is installed either way.
	CLI, Wrapper string
	// WrapperProgramVar is the variable the Wrapper starts instead of CLI (found on PATH) when it is set: how a
	// release installed apart (Profile.AtProgram) runs behind the wrapper. A plain path, never a secret.
	WrapperProgramVar string
	// Package is the npm package that installs CLI.
	Package string
	// Tested is the range of `CLI --version` releases ace's real-CLI tests run (tools/agent-clis/{oldest,newest},
	// kept equal by TestTestedRangeIsPinned): doctor says whether the installed one is inside it.
	Tested VersionRange
	// SignIns are the CLI's ways to authenticate, in the order the CLI prefers them.
	SignIns []SignIn
	// ConfigDir is where the CLI keeps its login and settings for a user whose home is home.
	ConfigDir func(home string, getenv func(string) string) string
	// Isolate fills an isolated home (see agents.PrepareHome) and returns the variables pointing the CLI at it.
	Isolate func(h IsolatedHome) (map[string]string, error)
	// RunEnv adds what every run of the CLI needs, whatever its home (see Profile.RunEnv); nil for none.
	RunEnv func(root, workdir string) (map[string]string, error)
	// SessionUsage reads what the CLI's sessions spent from the files it keeps in its config dir (see
	// Profile.SessionUsage); nil when ace reads none.
	SessionUsage SessionReader
	// Limits is how the CLI says its account hit a usage or rate limit.
	Limits LimitPatterns
	// Retries is how the CLI says it retries its model's API on its screen and its stderr (its stream's and
	// protocol's reports are its parser's and live adapter's to read): ace shows it, and asks a human when it
	// goes on too long.
	Retries RetryPatterns
	// Parser reads the stream of the headless command, the format Base names in HeadlessFormat; nil when the
	// CLI has none.
	Parser func() headless.Parser
	// Live starts the CLI in its live protocol mode (pkg/live: one conversation over its own structured
	// protocol); nil when ace speaks none of the CLI's. LiveMidTurn is how it takes a message sent while a turn
	// runs (live.OneTurn, live.TurnEach).
	Live        func(ctx context.Context, opts live.Options) (live.Conversation, error)
	LiveMidTurn live.MidTurn
	// LiveUsageLumped: the live protocol reports a turn's input with its cache reads in it (gemini's ACP), so a
	// live run's usage is read from the CLI's session files instead, as a tmux run's is.
	LiveUsageLumped bool
	// ContextImport is how the CLI's context file imports another file: the prefix of a line naming it ("@" in
	// claude's CLAUDE.md and gemini's GEMINI.md); "" when the file imports nothing.
	ContextImport string
	// Endpoints are the network destinations the CLI needs (egress allow patterns: its model API and sign-in),
	// which a box's proxy lets out for it. A gateway the user points it at (ANTHROPIC_BASE_URL …) comes from the
	// environment instead.
	Endpoints []string
	// ModelAPI is the endpoint (host:port) the CLI sends its model requests to, unless one of ModelVars (or its own
	// settings: ConfigEndpoints) points it elsewhere: ace names it when the agent cannot reach its model.
	ModelAPI  string
	ModelVars []string
	// ConfigEndpoints reads the endpoints the CLI's own settings in its config dir name (a gateway's base URL,
	// an MCP server's URL: see Endpoint); nil when it keeps none there. ace reads the user's files, which the
	// run's home copies (Settings), never the run's copy, which the agent can write.
	ConfigEndpoints func(dir string) []Endpoint
	// Settings are the files and directories of the CLI's config dir a box's home for one run copies from the
	// config dir the CLI uses outside boxes (its settings, the user's instructions, its approval rules), once;
	// the run's own changes stay the run's.
	Settings []string
	// BoxEnv are variables the CLI gets in a box: what keeps it from work the box makes useless (an update of
	// its read-only install dir).
	BoxEnv map[string]string
	// BoxArgv changes the CLI's command for a box (codex's own sandbox cannot nest in it); nil leaves it.
	BoxArgv func(argv []string) []string
	// Lookups are the paths the CLI reads in every parent directory of its working copy, up to / (its context
	// files, its project settings), relative to that directory: above a box's own paths — ace's root, the
	// user's home (~/.claude/CLAUDE.md) — the box hides them, and its recorder does not count the CLI's own
	// lookups as attempts (sandbox.Spec.Lookups). Seen in the real CLIs' boxed runs.
	Lookups []string
	// Internal: the agent is part of ace itself (the fake agent): nothing to install or sign in to.
	Internal bool
	// ProjectMCP: the CLI reads MCP servers from <workdir>/.mcp.json (the others from their home).
	ProjectMCP bool
}

// SessionReader sums what the sessions of workdir, in the CLI config dir dir, spent at or after since (every
// record when since is zero). The CLI wrote dir as the agent ran: each file is read through dir's guards
// (EachLine), and one refused is left out and listed in Usage.Refused.
type SessionReader func(dir untrusted.Tree, workdir string, since time.Time) (Usage, error)

// Profile is the adapter's built-in profile, which carries the adapter.
func (a *Adapter) Profile() Profile {
	p := a.Base()
	p.Name, p.adapter = a.Name, a
	if a.Package != "" {
		p.InstallHint = "npm install -g " + a.Package
	}
	return p
}

// Adapter returns the profile's adapter, nil for a custom agent.
func (p Profile) Adapter() *Adapter { return p.adapter }

// LiveUsageLumped reports whether a live run's usage comes from the CLI's session files rather than its protocol
// (Adapter.LiveUsageLumped).
func (p Profile) LiveUsageLumped() bool { return p.adapter != nil && p.adapter.LiveUsageLumped }

// WrappedCLI returns the CLI that the program exe stands in front of (codex for ace's codex-gh; the release's
// program when the profile runs one behind it, see AtProgram), or "" when exe is the agent's program itself. A
// custom command is never second-guessed: only the adapter's own wrapper names a CLI behind it.
func (p Profile) WrappedCLI(exe string) string {
	a := p.adapter
	if a == nil || a.Wrapper == "" || filepath.Base(exe) != a.Wrapper {
		return ""
	}
	if prog := p.Env[a.WrapperProgramVar]; a.WrapperProgramVar != "" && prog != "" {
		return prog
	}
	return a.CLI
}

// Program is the program the agent runs on its runner, as doctor checks and versions it: the command's
// executable (the headless command's for runner exec, the live command's for runner live), or the CLI behind
// ace's wrapper. A live agent's own tmux command, which it falls back to, is not what its runner starts.
func (p Profile) Program() string {
	exe := p.Executable()
	switch p.Runner {
	case store.RunnerExec:
		exe = p.HeadlessExecutable()
	case store.RunnerLive:
		if live := firstWord(p.Live); live != "" {
			exe = live
		}
	}
	if cli := p.WrappedCLI(exe); cli != "" {
		return cli
	}
	return exe
}

// RunEnv returns the variables every run of the agent needs besides its home, preparing the files they name
// under root (ace's workspace root); nil for agents that need none.
func (p Profile) RunEnv(root, workdir string) (map[string]string, error) {
	if p.adapter == nil || p.adapter.RunEnv == nil {
		return nil, nil
	}
	return p.adapter.RunEnv(root, workdir)
}

// Endpoints are the network destinations the agent's CLI needs (Adapter.Endpoints); none for a custom agent.
func (p Profile) Endpoints() []string {
	if p.adapter == nil {
		return nil
	}
	return p.adapter.Endpoints
}

// BoxEnv are the variables the agent's CLI gets when it runs in a box (Adapter.BoxEnv).
func (p Profile) BoxEnv() map[string]string {
	if p.adapter == nil {
		return nil
	}
	return p.adapter.BoxEnv
}

// BoxArgv is the agent's command as it runs in a box (Adapter.BoxArgv).
func (p Profile) BoxArgv(argv []string) []string {
	if p.adapter == nil || p.adapter.BoxArgv == nil {
		return argv
	}
	return p.adapter.BoxArgv(argv)
}

// BoxLookups are the paths the agent's CLI looks up in each parent of its working copy (Adapter.Lookups).
func (p Profile) BoxLookups() []string {
	if p.adapter == nil {
		return nil
	}
	return p.adapter.Lookups
}

// ReadsProjectMCP reports whether the agent reads MCP servers from the working copy (.mcp.json).
func (p Profile) ReadsProjectMCP() bool { return p.adapter != nil && p.adapter.ProjectMCP }

// Choose, Confirm and Permission build an adapter's dialog table: a menu answered with the option whose words
// match option, a screen without options confirmed with keys, a permission prompt (answered with the profile's
// Approve option when it auto-approves).
func Choose(name, match, option string) Dialog {
	return Dialog{Name: name, Match: regexp.MustCompile(match), Choose: regexp.MustCompile(option)}
}

// Confirm builds a dialog without options, answered with keys (see Choose).
func Confirm(name, match string, keys ...string) Dialog {
	return Dialog{Name: name, Match: regexp.MustCompile(match), Keys: keys}
}

// Permission builds a permission prompt (see Choose).
func Permission(name, match, option string) Dialog {
	d := Choose(name, match, option)
	d.Permission = true
	return d
}

// PermissionKeys builds a permission asked without options, answered with keys when the profile auto-approves
// and by a human otherwise (claude 2.1.332's "Auto mode can't check actions in this session").
func PermissionKeys(name, match string, keys ...string) Dialog {
	d := Confirm(name, match, keys...)
	d.Permission = true
	return d
}

// versionRe finds a version number in `--version` output ("2.1.197 (Claude Code)", "codex-cli 0.169.0").
var versionRe = regexp.MustCompile(`\d+\.\d+\.\d+[0-9A-Za-z.+-]*`)

// ParseVersion extracts the version number from a CLI's --version output, "" when there is none.
func ParseVersion(out string) string { return versionRe.FindString(strings.TrimSpace(out)) }
