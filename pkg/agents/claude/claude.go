// Package claude is everything ace knows of Claude Code as an agent: its profile and screens, sign-in and
// isolated home, limit messages, session files and headless stream.
package claude

import (
	"path/filepath"
	"regexp"

	"github.com/aceworks/ace/pkg/agents/agent"
	"github.com/aceworks/ace/pkg/headless"
	"github.com/aceworks/ace/pkg/live"
)

// Adapter is Claude Code (`claude`, npm @anthropic-ai/claude-code). Screens: pkg/agents/testdata/real/claude-2.1.197.
//
// Sign-in, in claude's own order: ANTHROPIC_API_KEY (claude asks once whether to use it: the api-key dialog),
// CLAUDE_CODE_OAUTH_TOKEN (a subscriber's token from `claude setup-token`; no dialog), or its login in
// ~/.claude/.credentials.json (CLAUDE_CONFIG_DIR moves it; on macOS the token sits in the keychain, which an
// isolated home cannot reach).
func Adapter() *agent.Adapter {
	re := regexp.MustCompile
	return &agent.Adapter{
		Live: live.Starter(StartLive), LiveMidTurn: live.OneTurn,
		Name: "claude", CLI: "claude", Package: "@anthropic-ai/claude-code",
		Tested: agent.VersionRange{Oldest: "2.1.197", Newest: "2.1.332"},
		SignIns: []agent.SignIn{
			{Name: "api-key", Secret: "ANTHROPIC_API_KEY", How: "an Anthropic API key"},
			{Name: "oauth-token", Secret: "CLAUDE_CODE_OAUTH_TOKEN", How: "a subscription token from `claude setup-token`"},
			{Name: "login", Files: []string{".credentials.json"}, How: "sign in with `claude` (/login)"},
		},
		ConfigDir: agent.DirFromEnv("CLAUDE_CONFIG_DIR", ".claude", false),
		Isolate:   isolate,
		// The API, the WebFetch safety check (claude.ai) and the OAuth sign-in's refresh (network-config in
		// claude's docs); what 2.1.331 reads at start (seen through the box's proxy): its release notes
		// (raw.githubusercontent.com) and its latest version (downloads.claude.ai). Not telemetry (statsig) nor
		// error reports (sentry.io, which would take anyone's reports); its plugin marketplace (github.com) is
		// allowed where the repository's remote is there.
		Endpoints: []string{"api.anthropic.com:443", "claude.ai:443", "console.anthropic.com:443", "platform.claude.com:443",
			"downloads.claude.ai:443", "raw.githubusercontent.com:443"},
		Settings:        []string{"settings.json", "CLAUDE.md"},
		ConfigEndpoints: configEndpoints,
		Retries:         retries,
		ModelAPI:        "api.anthropic.com:443", ModelVars: modelVars,
		// A box's install dir is read-only: no update to try. Not CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC (nor
		// DISABLE_TELEMETRY): with either, 2.1.331's auto mode cannot check actions through a gateway
		// (ANTHROPIC_BASE_URL) and stops each turn with "Auto mode can't check actions in this session".
		BoxEnv: map[string]string{"DISABLE_AUTOUPDATER": "1"},
		// Up to /, in each parent of the working copy (2.1.331 reads AGENTS.md as well).
		Lookups:      []string{"CLAUDE.md", "CLAUDE.local.md", ".claude", "AGENTS.md"},
		ProjectMCP:   true,
		Base:         profile,
		SessionUsage: sessionUsage,
		Limits: agent.LimitPatterns{
			Screen: []*regexp.Regexp{
				// Subscriber: "⎿  You've hit your session limit · resets 7:17pm (UTC)" (also weekly/Opus limits);
				// 2.1.331: "You've hit your 5-hour limit · resets 5:09am (UTC)".
				re(`You(?:'|’)ve hit your (?:[\w-]+ )*limit(?: · resets (?P<reset>[^·\n]*?\([^)\n]+\)))?`),
				// API key: a 429 claude does not wait out by itself, and an overload it gave up on.
				re(`API Error: (?:Request rejected \(429\)|529 Overloaded)`),
			},
			Menus: []agent.Dialog{
				// "❯ 1. Stop and wait for limit to reset" is preselected: Enter keeps it.
				agent.Choose("limit-menu", `Stop and wait for limit to reset`, `^Stop and wait`),
			},
			Stream: []*regexp.Regexp{
				re(`You(?:'|’)ve hit your (?:[\w-]+ )*limit(?: · resets (?P<reset>[^·\n]*?\([^)\n]+\)))?`),
				re(`API Error: (?:Request rejected \(429\)|529 Overloaded)|"?rate_limit(?:_error)?"?`),
			},
			Clock: agent.ClockZoned,
		},
		Parser:        func() headless.Parser { return &parser{} },
		ContextImport: "@",
	}
}

// gitTools lets headless claude run the git commands ace's done protocol asks for (commit its work and
// look at it): with acceptEdits alone, `claude -p` denies every Bash call, so the agent's `git commit` fails and
// ace commits for it (seen end to end in e2e realcli_e2e_test.go). Nothing else is allowed: no push
// (ace pushes), no other command.
const gitTools = `--allowedTools "Bash(git add:*)" "Bash(git commit:*)" "Bash(git status:*)" "Bash(git diff:*)" "Bash(git log:*)"`

func profile() agent.Profile {
	re := regexp.MustCompile
	approval := `Do you want to (proceed|create|make|edit|overwrite)`
	return agent.Profile{
		Live:    "claude --model {model}",
		Command: "claude --model {model}", ContinueCommand: "claude --continue --model {model}", Model: "sonnet",
		// 2.1.331's idle footer names the permission mode ("⏵⏵ auto mode on (shift+tab to cycle)") where
		// 2.1.197 said "? for shortcuts"; both stay under the working line (ComposerStays).
		Markers: agent.Markers{Ready: re(`\? for shortcuts|\(shift\+tab to cycle\)`), Busy: re(`esc to interrupt`), Approval: re(approval),
			// AskUserQuestion: a numbered list the human answers, never ace.
			Question: re(`Enter to select`),
			Pasted:   re(`\[Pasted text #\d+`),
			// 2.1.332 behind a gateway, when it did not run a call its safety check could not judge: "Did not run
			// 1 call … Interrupted · What should Claude do instead?", then this notice as the transcript's last
			// entry, "Actions that need the check now ask for your approval": a message goes on, and each action
			// asks. Its transcript's entries start with ● (what Claude did) or ❯ (what the user wrote).
			Stopped: re(`● Auto mode can't check actions in this session\. Its safety check runs on the server`),
			Entry:   re(`(?m)^[●❯] \S`)},
		// Options by their words: 2.1.331 lists "No, exit" first and preselected in its trust dialog (2.1.197
		// had "1. Yes, I trust this folder" first), and "2. No (recommended)" is preselected for the API key.
		Dialogs: []agent.Dialog{
			agent.Choose("trust", `Is this a project you created or one you trust|Yes, I trust this folder`, `^Yes, I trust this folder`),
			agent.Choose("api-key", `Do you want to use this API key\?`, `^Yes$`),
			agent.Permission("permission", approval, `^Yes$`),
			// 2.1.331, the first tool call auto mode checks when requests go through a gateway (ANTHROPIC_BASE_URL):
			// a notice that its classifier billing changes, "Enter to continue · Esc to cancel". Continuing keeps
			// auto mode as the user has it.
			agent.Confirm("auto-mode-notice", `(?s)auto mode.*Enter to continue · Esc to cancel`, "Enter"),
			// 2.1.332, mid-turn, when its server-side safety check does not get through a gateway (or nonessential
			// traffic is off): "Auto mode can't check actions in this session … Enter to stay in auto mode ·
			// shift+Tab to leave for accept edits mode and stop · Esc to cancel". Staying keeps auto mode, where each
			// action the check would have judged asks instead — a permission, which auto_approve allows; leaving
			// would stop the turn and run later actions unchecked. Without auto_approve it is the human's choice.
			agent.PermissionKeys("auto-mode-check", `(?s)Auto mode can't check actions in this session.*Enter to stay in auto mode`, "Enter"),
		},
		Approve: regexp.MustCompile(`^Yes$`), ComposerStays: true, CompactCommand: "/compact", ContextFile: "CLAUDE.md",
		QuestionTool: "AskUserQuestion",
		// 2.1.331 starts in auto mode, where its classifier allows or blocks each tool call; without
		// auto_approve the user wants a human to decide, as with 2.1.197's default mode.
		AskArgs: []string{"--permission-mode", "default"},
		// -p without a prompt argument reads the prompt from stdin. Nobody is there to answer a permission
		// prompt: edits are accepted, other tools follow the user's settings (or override headless with
		// --dangerously-skip-permissions inside a sandbox).
		Headless:       "claude -p --output-format stream-json --verbose --permission-mode acceptEdits " + gitTools + " --model {model}",
		HeadlessResume: "claude -p --resume {session_id} --output-format stream-json --verbose --permission-mode acceptEdits " + gitTools + " --model {model}",
		HeadlessFormat: "claude",
	}
}

// isolate: CLAUDE_CONFIG_DIR holds .claude.json, where onboarding is marked done (else claude runs an online
// check at first start and exits when it cannot reach its service) and the working copy is trusted.
func isolate(h agent.IsolatedHome) (map[string]string, error) {
	dir := filepath.Join(h.Home, ".claude")
	err := agent.MergeJSON(h.Files(), ".claude/.claude.json", func(m map[string]any) {
		m["hasCompletedOnboarding"] = true
		agent.Object(agent.Object(m, "projects"), h.Workdir)["hasTrustDialogAccepted"] = true
	})
	return map[string]string{"CLAUDE_CONFIG_DIR": dir}, err
}
