// Package agent is what ace knows of a coding-agent CLI and how it reads it: the profile (how to start the CLI,
// argv templates with no shell; how to read its screens, markers → states; which first-run dialogs to answer) and
// the adapter that carries one CLI's own knowledge (sign-in, isolated home, versions, limit messages, session
// files, stream parser). Each built-in agent fills an adapter in its own folder (pkg/agents/claude, …);
// pkg/agents lists them and lays ace.toml over them.
package agent

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/aceworks/ace/pkg/secrets"
	"github.com/aceworks/ace/pkg/store"
)

// State is what an agent's screen says it is doing.
type State string

// Agent states, from the screen and the pane.
const (
	StateStarting State = "starting"
	StateReady    State = "ready"
	StateBusy     State = "busy"
	StateApproval State = "approval"
	StateQuestion State = "question"
	StateDialog   State = "dialog"
	StateExited   State = "exited"
	StateCrashed  State = "crashed"
)

// Markers are compiled screen regexes; nil never matches. Starting wins over everything else: it marks a
// screen in transition (a CLI restarting after a dialog) that still shows what it is leaving, and answering
// that again would send keys into the next screen.
type Markers struct {
	Ready, Busy, Approval, Question, Starting *regexp.Regexp
	// Pasted is the placeholder a CLI draws in its composer for a long paste instead of the text.
	Pasted *regexp.Regexp
	// Stopped is a notice the CLI prints when it stopped the agent's turn by itself and waits for a message to go
	// on; Entry starts an entry of its transcript (see TurnStopped).
	Stopped, Entry *regexp.Regexp
}

// Dialog is a first-run or permission screen and how ace answers it: by meaning, the option whose words match
// Choose (see Menu); a screen without options (a prefilled key to confirm) with Keys.
type Dialog struct {
	Name   string
	Match  *regexp.Regexp
	Choose *regexp.Regexp
	Keys   []string
	// Permission dialogs are answered only when the profile auto-approves; the others always.
	Permission bool
}

// Profile is everything ace knows about one agent CLI.
type Profile struct {
	Name string
	// Command is an argv template: split like a shell would split words, then {model}, {task_file}, {workdir},
	// {issue}, {repo} and {ace_bin} are expanded inside each word — so a value never becomes two arguments
	// and nothing is ever interpreted by a shell.
	Command string
	Model   string
	Markers Markers
	Dialogs []Dialog
	// Approve is the option of a permission prompt that allows the one action asked about (not "always").
	Approve *regexp.Regexp
	// ComposerStays: the CLI keeps its composer (and its ready marker) drawn while it works, the busy line above
	// it (claude, codex, gemini). Without it (a custom agent printing lines) the marker drawn lowest decides.
	ComposerStays  bool
	Nudge          string
	CompactCommand string
	// ContinueCommand starts the CLI again in the conversation it last had in its working directory (claude
	// --continue, codex resume --last, gemini --resume latest): a released run's next round resumes the same
	// conversation in the same working copy. Empty: a new conversation, told where the work stands.
	ContinueCommand string
	// Live is the argv template of the live runner: the CLI and the user's flags, to which its live protocol
	// adapter (pkg/live) adds the flags of its protocol mode; "" when the CLI has no live mode ace speaks.
	Live string
	// AskArgs make the CLI ask before the tool calls it would otherwise decide itself; added to the command when
	// auto_approve is off (see Argv).
	AskArgs []string
	// QuestionTool is the tool through which the CLI's model asks the human a question with options, drawn as a
	// menu in the terminal (claude's AskUserQuestion); "" when it has none and asks through ace's .ace/QUESTION.
	QuestionTool string
	// ContextFile is the file the CLI reads by itself at the top of its working directory (CLAUDE.md,
	// GEMINI.md, AGENTS.md); ace points it at the repository memory.
	ContextFile string
	// Headless is the argv template of the non-interactive runner (prompt on stdin); HeadlessResume continues
	// the conversation {session_id}; HeadlessFormat names the stream parser (claude, codex, gemini).
	Headless       string
	HeadlessResume string
	HeadlessFormat string
	InstallHint    string
	// OneEnter says the CLI takes a pasted prompt's Enter by the screen it last drew: a second Enter pressed
	// before it has redrawn submits the same text again (gemini 0.61 on a loaded machine took an answer twice, and
	// then stalled). Such a CLI gets one Enter, and another only after a submit retry's wait (tmux.enter_count
	// is for the others).
	OneEnter    bool
	Home        string // "" or "isolated"
	AutoApprove bool
	Env         map[string]string
	// Secrets are required: a run fails without them. A built-in agent's sign-in secrets are not listed
	// here; its adapter resolves them when present (see SignIn).
	Secrets []string
	Runner  string // store.RunnerTmux, RunnerExec or RunnerLive
	// GitHubMCP is the URL of a GitHub MCP server to give the agent ("" = none), authenticated with the
	// GitHub token ace injects as GITHUB_TOKEN.
	GitHubMCP string
	// adapter is the built-in agent's knowledge (sign-in, home, versions); nil for a custom agent.
	adapter *Adapter
}

// Vars fill a command template.
type Vars struct {
	Model    string
	TaskFile string
	Workdir  string
	Repo     string
	Issue    int
	// AceBin is where ace keeps its helper scripts (codex-gh).
	AceBin string
	// SessionID is the agent's conversation to resume (headless runner).
	SessionID string
}

// Argv expands the command template. Where ace does not auto-approve, a built-in CLI that would decide its
// permissions by itself (claude 2.1.331's default auto mode) gets AskArgs, so that each permission reaches a
// human as ace.toml says — unless the user's own command runs something else (a wrapper).
func (p Profile) Argv(v Vars) ([]string, error) { return p.argvOf(p.Command, v) }

// ContinueArgv is the command that starts the CLI again in the conversation it last had in its working
// directory (ContinueCommand), or Argv where it has none (a custom agent without continue_command, or the user's
// own command in place of a built-in one's: agents.Resolve drops the built-in continue then).
func (p Profile) ContinueArgv(v Vars) ([]string, error) {
	if p.ContinueCommand == "" {
		return p.Argv(v)
	}
	return p.argvOf(p.ContinueCommand, v)
}

func (p Profile) argvOf(template string, v Vars) ([]string, error) {
	argv, err := expand(template, v, p.Name+".command")
	if err == nil && !p.AutoApprove && len(p.AskArgs) > 0 && p.adapter != nil && len(argv) > 0 && filepath.Base(argv[0]) == p.adapter.CLI {
		argv = append(argv, p.AskArgs...)
	}
	return argv, err
}

// LiveArgv expands the live template (AskArgs added as for Argv), or says why the agent has none.
func (p Profile) LiveArgv(v Vars) ([]string, error) {
	if p.Live == "" {
		return nil, fmt.Errorf("agent %s has no live mode (runner %q is for claude, codex and gemini)", p.Name, store.RunnerLive)
	}
	return p.argvOf(p.Live, v)
}

// HeadlessArgv expands the headless template, or the resume template when v.SessionID names a conversation.
func (p Profile) HeadlessArgv(v Vars) ([]string, error) {
	if p.Headless == "" {
		return nil, fmt.Errorf("agent %s has no headless command (agents.%s.headless)", p.Name, p.Name)
	}
	if v.SessionID == "" {
		return expand(p.Headless, v, p.Name+".headless")
	}
	if p.HeadlessResume == "" {
		return nil, fmt.Errorf("agent %s cannot continue a conversation headless (agents.%s.headless_resume)", p.Name, p.Name)
	}
	return expand(p.HeadlessResume, v, p.Name+".headless_resume")
}

func expand(tmpl string, v Vars, key string) ([]string, error) {
	words, err := secrets.SplitCommand(tmpl)
	if err != nil {
		return nil, fmt.Errorf("agents.%s: %w", key, err)
	}
	if len(words) == 0 {
		return nil, fmt.Errorf("agents.%s: empty", key)
	}
	r := strings.NewReplacer("{model}", v.Model, "{task_file}", v.TaskFile, "{workdir}", v.Workdir,
		"{repo}", v.Repo, "{issue}", fmt.Sprint(v.Issue), "{ace_bin}", v.AceBin, "{session_id}", v.SessionID)
	var out []string
	for i := 0; i < len(words); i++ {
		w := words[i]
		// "--model {model}" with no model: leave the choice to the CLI. Likewise a config override naming the
		// model (codex's -c 'model="{model}"').
		if v.Model == "" && i+1 < len(words) && strings.HasPrefix(w, "-") &&
			(words[i+1] == "{model}" || w == "-c" && strings.Contains(words[i+1], "{model}")) {
			i++
			continue
		}
		if v.Model == "" && strings.HasSuffix(w, "={model}") {
			continue
		}
		out = append(out, r.Replace(w))
	}
	return out, nil
}

// HeadlessExecutable is the program the headless command runs.
func (p Profile) HeadlessExecutable() string { return firstWord(p.Headless) }

// Executable is the program the command runs.
func (p Profile) Executable() string { return firstWord(p.Command) }

// firstWord is the program a command template runs ("" for none).
func firstWord(tmpl string) string {
	words, err := secrets.SplitCommand(tmpl)
	if err != nil || len(words) == 0 {
		return ""
	}
	return words[0]
}
