package agents

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/aceworks/ace/pkg/store"
)

// Override is one agent's table of ace.toml, [agents.<name>]: the one spelling of a per-agent setting. Its tags
// are the keys (config embeds it in AgentConfig and decodes the table into it), and Resolve lays it over the
// built-in profile, empty fields keeping the built-in values. A new per-agent key is a field here and its line in
// Resolve (with its check, where it needs one, in config's validateAgent, and its line in ace.toml.example).
type Override struct {
	// Command is the argv template of the interactive CLI (tmux runner).
	Command string `toml:"command"`
	// ContinueCommand starts the agent again in the conversation it last had in its working copy (a released
	// run's next round); "" for a built-in agent keeps its own unless command replaces the built-in one.
	ContinueCommand string `toml:"continue_command"`
	Model           string `toml:"model"`
	// Secrets are the secrets the agent requires, injected into its environment; Env plain variables.
	Secrets []string          `toml:"secrets"`
	Env     map[string]string `toml:"env"`
	// Runner is store.RunnerTmux, RunnerExec or RunnerLive; "" is tmux.
	Runner string `toml:"runner"`
	Home   string `toml:"home"`
	// AutoApprove answers permission dialogs with the profile's "yes" key (true turns it on; false keeps the
	// built-in profile's).
	AutoApprove    bool           `toml:"auto_approve"`
	Markers        MarkerOverride `toml:"markers"`
	Headless       string         `toml:"headless"`
	HeadlessResume string         `toml:"headless_resume"`
	HeadlessFormat string         `toml:"headless_format"`
	Nudge          string         `toml:"nudge"`
	CompactCommand string         `toml:"compact_command"`
	GitHubMCP      string         `toml:"github_mcp"`
	// ContextFile is the file the agent reads at the top of its working copy (CLAUDE.md, GEMINI.md, AGENTS.md).
	ContextFile string `toml:"context_file"`
	// Program, set by ace and never read from ace.toml, is a release of the built-in CLI installed apart
	// (clirelease's): each of the agent's commands that starts the CLI by name starts it instead. An agent named
	// NAME@VERSION (ace eval's claude@2.1.331) is the built-in NAME with its Program.
	Program string `toml:"-"`
}

// MarkerOverride is [agents.<name>.markers]: regexes over the agent's visible screen; empty keeps the built-in
// marker.
type MarkerOverride struct {
	Ready    string `toml:"ready"`
	Busy     string `toml:"busy"`
	Approval string `toml:"approval"`
	Question string `toml:"question"`
	// Dialog is a first-run dialog answered with Enter.
	Dialog string `toml:"dialog"`
	// Starting is a screen in transition, on which nothing is answered.
	Starting string `toml:"starting"`
}

// KeyError is a setting Resolve cannot take: Key is its key within the agent's table ("markers.busy"). Resolve
// returns every one it finds, joined (errors.Join).
type KeyError struct {
	Key string
	Err error
}

func (e *KeyError) Error() string { return e.Key + ": " + e.Err.Error() }

func (e *KeyError) Unwrap() error { return e.Err }

// Resolve lays o over the built-in profile name. An agent that is not built in lives in ace.toml alone: it
// needs a command for tmux, or, when it only runs headless, its headless command. Every problem found is in the
// error, joined.
func Resolve(name string, o Override) (Profile, error) {
	var errs []error
	p, ok := Builtin(name)
	if base, _, release := strings.Cut(name, "@"); !ok && release && o.Program != "" {
		p, ok = Builtin(base)
	}
	if !ok {
		if strings.TrimSpace(o.Command) == "" && (o.Runner != store.RunnerExec || strings.TrimSpace(o.Headless) == "") {
			errs = append(errs, errUnknown(name))
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
		p.Runner = store.RunnerTmux
	}
	if o.AutoApprove {
		p.AutoApprove = true
	}
	if o.Env != nil {
		p.Env = o.Env
	}
	if o.Secrets != nil {
		p.Secrets = o.Secrets
	}
	// Markers are read over a whole screen: ^ and $ mean a line's start and end, as a user writing '^READY>'
	// means; a dialog is matched as written.
	for _, m := range []struct {
		key, src, flags string
		dst             **regexp.Regexp
	}{{"ready", o.Markers.Ready, "(?m)", &p.Markers.Ready}, {"busy", o.Markers.Busy, "(?m)", &p.Markers.Busy},
		{"approval", o.Markers.Approval, "(?m)", &p.Markers.Approval},
		{"question", o.Markers.Question, "(?m)", &p.Markers.Question}, {"dialog", o.Markers.Dialog, "", nil},
		{"starting", o.Markers.Starting, "(?m)", &p.Markers.Starting}} {
		if m.src == "" {
			continue
		}
		re, err := regexp.Compile(m.flags + m.src)
		switch {
		case err != nil:
			errs = append(errs, &KeyError{Key: "markers." + m.key, Err: err})
		case m.dst == nil:
			p.Dialogs = append([]Dialog{{Name: "dialog", Match: re, Keys: []string{"Enter"}}}, p.Dialogs...)
		default:
			*m.dst = re
		}
	}
	if o.Program != "" {
		// The command its runner starts must be the release (codex's starts ace's codex-gh, which finds codex on
		// PATH; a user's wrapper, its own program).
		if p, _ = p.AtProgram(o.Program); p.Program() != o.Program {
			errs = append(errs, &KeyError{Key: "command", Err: fmt.Errorf("does not start the CLI by its name: ace cannot run "+
				"the release at %s with it", o.Program)})
		}
	}
	if len(errs) > 0 {
		return Profile{}, errors.Join(errs...)
	}
	return p, nil
}
