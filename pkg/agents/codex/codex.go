// Package codex is everything ace knows of the Codex CLI as an agent: its profile and screens, sign-in and
// isolated home, limit messages, session files and headless stream.
package codex

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/aceworks/ace/pkg/agents/agent"
	"github.com/aceworks/ace/pkg/headless"
	"github.com/aceworks/ace/pkg/live"
)

// Adapter is the Codex CLI (`codex`, npm @openai/codex), started through ace's codex-gh wrapper (it hands
// the GitHub token to codex's GitHub MCP server). Screens: pkg/agents/testdata/real/codex-0.169.0.
//
// Sign-in: OPENAI_API_KEY, or the ChatGPT sign-in in ~/.codex/auth.json (CODEX_HOME moves it). With only the
// key, a fresh CODEX_HOME still walks through sign-in screens: "Sign in with ChatGPT" → 3 ("Sign in another
// way") → "Use an OpenAI API key" → Enter → "Press enter to save" → ONE Enter, then the screen may stay a while:
// pressing again stalls it, so the engine answers a dialog once and waits for the screen to change.
//
// Commits: codex's workspace-write sandbox mounts <workdir>/.git read-only, so the agent's `git commit` fails
// and it spends turns on it. ace makes .git a writable root of its own (sandbox_workspace_write.writable_roots,
// checked with `codex sandbox` on 0.169.0: `git commit` fails without it, succeeds with it), so the agent
// commits its own work like the other agents and the rest of the sandbox stays as it is.
func Adapter() *agent.Adapter {
	re := regexp.MustCompile
	return &agent.Adapter{
		Live: live.Starter(StartLive), LiveMidTurn: live.OneTurn,
		Name: "codex", CLI: "codex", Wrapper: "codex-gh", WrapperProgramVar: "ACE_CODEX_PROGRAM", Package: "@openai/codex",
		Tested: agent.VersionRange{Oldest: "0.169.0", Newest: "0.171.0"},
		SignIns: []agent.SignIn{
			{Name: "api-key", Secret: "OPENAI_API_KEY", How: "an OpenAI API key"},
			{Name: "login", Files: []string{"auth.json"}, How: "sign in with ChatGPT (`codex login`)"},
		},
		ConfigDir: agent.DirFromEnv("CODEX_HOME", ".codex", false),
		Isolate:   isolate,
		// The API key's endpoint, and the ChatGPT sign-in's backend and token refresh; what 0.169.0 reads at start
		// (seen through the box's proxy): its feature flags (ab.chatgpt.com) and files of its GitHub repository
		// (raw.githubusercontent.com; its release checks on GitHub get through where the tracker is GitHub: the
		// git remote's host and the tracker's endpoints are allowed). Its native binary (Rust) honours
		// HTTPS_PROXY by itself.
		Endpoints: []string{"api.openai.com:443", "chatgpt.com:443", "auth.openai.com:443", "ab.chatgpt.com:443",
			"raw.githubusercontent.com:443"},
		// rules/: the user's execpolicy rules, which still make codex ask before a command in a box.
		Settings:        []string{"config.toml", "AGENTS.md", "rules"},
		ConfigEndpoints: configEndpoints,
		Retries:         retries,
		ModelAPI:        "api.openai.com:443", ModelVars: []string{"OPENAI_BASE_URL"},
		BoxArgv:      boxArgv,
		Lookups:      []string{"AGENTS.md", "AGENTS.override.md"},
		Base:         profile,
		SessionUsage: sessionUsage,
		Limits: agent.LimitPatterns{
			Screen: []*regexp.Regexp{
				re(`You(?:'|’)ve hit your usage limit\.(?:[^\n]*?try again at (?P<reset>\d{1,2}:\d{2}\s*[AaPp][Mm]))?`),
			},
			Menus: []agent.Dialog{
				// "› 1. Switch to <model>" is preselected: Enter would change the user's model; 2 keeps it.
				agent.Choose("limit-menu", `Keep current model`, `^Keep current model`),
			},
			Stream: []*regexp.Regexp{
				re(`You(?:'|’)ve hit your usage limit\.(?:[^\n]*?try again at (?P<reset>\d{1,2}:\d{2}\s*[AaPp][Mm]))?`),
				re(`usage_limit_reached|429 Too Many Requests`),
			},
			Clock: agent.ClockLocal,
		},
		Parser: func() headless.Parser { return &parser{} },
	}
}

// boxArgv runs codex's commands without its own sandbox in ace's box, which bounds them instead (files and
// network). On Linux codex's sandbox is bubblewrap, and a box allows no nested user namespace (bwrap
// --disable-userns, where most unprivileged kernel exploits start): 0.169.0's every shell command failed there
// with "bwrap: Creating new namespace failed: nesting depth or /proc/sys/user/max_*_namespaces exceeded
// (ENOSPC)" (e2e sandbox_e2e_test.go). Only the value of a --sandbox the command has is changed, or
// of a sandbox_mode config override (the live command's).
func boxArgv(argv []string) []string {
	out := slices.Clone(argv)
	for i, a := range out {
		switch {
		case (a == "--sandbox" || a == "-s") && i+1 < len(out):
			out[i+1] = "danger-full-access"
		case strings.HasPrefix(a, "--sandbox="):
			out[i] = "--sandbox=danger-full-access"
		case a == "-c" && i+1 < len(out) && strings.HasPrefix(out[i+1], "sandbox_mode="):
			out[i+1] = `sandbox_mode="danger-full-access"`
		}
	}
	return out
}

// gitWritable is the -c option that gives the sandbox a writable .git (see Adapter).
const gitWritable = `-c 'sandbox_workspace_write.writable_roots=["{workdir}/.git"]'`

func profile() agent.Profile {
	re := regexp.MustCompile
	approval := `Would you like to run the following command\?`
	return agent.Profile{
		Live: `{ace_bin}/codex-gh -c 'model="{model}"' -c 'sandbox_mode="workspace-write"' ` + gitWritable +
			` -c 'approval_policy="on-request"'`,
		Command: "{ace_bin}/codex-gh --model {model} --sandbox workspace-write " + gitWritable + " --ask-for-approval on-request",
		// resume filters its sessions by the working directory: --last is this working copy's conversation.
		ContinueCommand: "{ace_bin}/codex-gh resume --last --model {model} --sandbox workspace-write " + gitWritable +
			" --ask-for-approval on-request",
		// The splash shows a look-alike composer ("› Ask Codex to do anything") for seconds before the first
		// dialog; only the real one has the status line "<model> default · <cwd>" under it.
		Markers: agent.Markers{Ready: re(`default · |Worked for`),
			// A prompt submitted while codex is still connecting is queued, not lost: pasting it again would
			// queue it twice.
			Busy:     re(`esc to interrupt|Queued follow-up inputs|edit last queued message`),
			Approval: re(approval + `|Press enter to confirm or esc to cancel`),
			Question: re(`Enter to select`),
			Pasted:   re(`\[Pasted Content \d+`)},
		// Most specific first: the sign-in screens share words.
		Dialogs: []agent.Dialog{
			agent.Choose("trust", `Trust this folder\?`, `^Trust and continue`),
			agent.Confirm("api-key", `Detected OPENAI_API_KEY environment variable|Press enter to save`, "Enter"),
			agent.Choose("sign-in-method", `Use an OpenAI API key`, `^Use an OpenAI API key`),
			agent.Choose("sign-in", `Sign in with ChatGPT`, `^Sign in another way`),
			agent.Choose("model-notice", `Use existing model`, `^Use existing model`),
			agent.Permission("approval", approval, `^Yes, proceed`),
		},
		Approve: regexp.MustCompile(`^Yes, proceed`), ComposerStays: true, CompactCommand: "/compact", ContextFile: "AGENTS.md",
		// "-" reads the prompt from stdin; exec defaults to a read-only sandbox, so ask for workspace-write.
		Headless:       "{ace_bin}/codex-gh exec --json --sandbox workspace-write " + gitWritable + " --model {model} -",
		HeadlessResume: "{ace_bin}/codex-gh exec --json --sandbox workspace-write " + gitWritable + " --model {model} resume {session_id} -",
		HeadlessFormat: "codex",
	}
}

// isolate: CODEX_HOME with the working copy trusted and the GitHub MCP server, appended to the user's
// config.toml text (kept as the user wrote it).
func isolate(h agent.IsolatedHome) (map[string]string, error) {
	dir := filepath.Join(h.Home, ".codex")
	home := h.Files() // the agent's: read and written beneath it alone
	if err := home.MkdirAll(".codex", 0o700); err != nil {
		return nil, err
	}
	old, err := home.ReadFile(".codex/config.toml", agent.SettingsMax)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	section := fmt.Sprintf("[projects.%q]", h.Workdir)
	add := ""
	if !strings.Contains(string(old), section) {
		add += fmt.Sprintf("\n%s\ntrust_level = \"trusted\"\n", section)
	}
	if h.MCP.GitHubURL != "" && !strings.Contains(string(old), "[mcp_servers.github]") {
		add += fmt.Sprintf("\n[mcp_servers.github]\nurl = %q\nbearer_token_env_var = %q\n", h.MCP.GitHubURL, h.MCP.GitHubTokenEnv)
	}
	if add != "" {
		if err := home.WriteFile(".codex/config.toml", append(old, []byte(add)...), 0o600); err != nil {
			return nil, err
		}
	}
	return map[string]string{"CODEX_HOME": dir}, nil
}
