// Package gemini is everything ace knows of the Gemini CLI as an agent: its profile and screens, sign-in and
// isolated home, limit messages, session files and headless stream.
package gemini

import (
	"regexp"

	"github.com/aceworks/ace/pkg/agents/agent"
	"github.com/aceworks/ace/pkg/headless"
	"github.com/aceworks/ace/pkg/live"
)

// Adapter is the Gemini CLI (`gemini`, npm @google/gemini-cli). Screens: pkg/agents/testdata/real/gemini-0.61.0.
//
// Sign-in: GEMINI_API_KEY, or the Google sign-in in ~/.gemini/oauth_creds.json (GEMINI_CLI_HOME moves the
// home that holds .gemini). With only the key and no settings, gemini asks how to authenticate ("Existing API
// key detected (GEMINI_API_KEY)…"): 2 picks "Use Gemini API Key" and submits, then the key screen ("Enter
// Gemini API Key", prefilled) takes Enter.
//
// Headless gemini refuses an untrusted folder (exit 55): --skip-trust trusts the working copy for that one
// session, nothing broader (no trustedFolders.json entry, no parent folder).
//
// Timing (0.61, measured on 2 cores): its start draws nothing until the composer is ready, after about 3 s of CPU
// (a 16 MB bundle parsed by a node that relaunches itself), 17–21 s of wall time beside a load of 30, boxed or
// not; "Thinking..." is redrawn at about 11 % of a core while it waits; a model request unanswered for 60 s is
// abandoned and sent again 6 s later.
func Adapter() *agent.Adapter {
	re := regexp.MustCompile
	return &agent.Adapter{
		Live: live.Starter(StartLive), LiveMidTurn: live.TurnEach, LiveUsageLumped: true,
		Name: "gemini", CLI: "gemini", Package: "@google/gemini-cli",
		Tested: agent.VersionRange{Oldest: "0.61.0", Newest: "0.61.0"},
		SignIns: []agent.SignIn{
			{Name: "api-key", Secret: "GEMINI_API_KEY", How: "a Gemini API key"},
			{Name: "login", Files: []string{"oauth_creds.json", "google_accounts.json"}, How: "sign in with Google in `gemini`"},
		},
		ConfigDir: agent.DirFromEnv("GEMINI_CLI_HOME", ".gemini", true),
		Isolate:   isolate,
		// The API key's endpoint; the Google sign-in's Code Assist backend, token refresh and user info; its
		// usage statistics (play.googleapis.com). It takes HTTPS_PROXY into its own fetch dispatcher.
		Endpoints: []string{"generativelanguage.googleapis.com:443", "cloudcode-pa.googleapis.com:443",
			"oauth2.googleapis.com:443", "www.googleapis.com:443", "play.googleapis.com:443"},
		// policies/: the user's policy-engine rules (which tools ask first).
		Settings:        []string{"settings.json", "GEMINI.md", "policies"},
		ConfigEndpoints: configEndpoints,
		Retries:         retries,
		ModelAPI:        "generativelanguage.googleapis.com:443", ModelVars: []string{"GOOGLE_GEMINI_BASE_URL", "GOOGLE_VERTEX_BASE_URL"},
		Lookups:      []string{"GEMINI.md"},
		RunEnv:       runEnv,
		Base:         profile,
		SessionUsage: sessionUsage,
		Limits: agent.LimitPatterns{
			Screen: []*regexp.Regexp{
				// Interactive, a daily quota opens a box: "Usage limit reached for gemini-3.5-flash-lite." with
				// "● 1. Switch to <model>" "2. Stop".
				re(`Usage limit reached for [\w.-]*\w|You have exhausted your (?:daily )?quota|Quota exceeded for quota metric|RESOURCE_EXHAUSTED`),
			},
			Menus: []agent.Dialog{
				// "● 1. Switch to <model>" (or, once no model is left, "● 1. Keep trying") is preselected: Enter would
				// change the user's model or retry into the limit; 2 stops and keeps the model.
				agent.Choose("limit-menu", `(?s)Usage limit reached for .*\d\. (?:Switch to|Keep trying).*2\. Stop`, `^Stop`),
			},
			Stream: []*regexp.Regexp{
				re(`You have exhausted your (?:daily )?quota|Quota exceeded for quota metric|RESOURCE_EXHAUSTED`),
			},
			ExitCodes:         []int{173},
			UnsavedUntilReply: true,
		},
		Parser:        func() headless.Parser { return &parser{} },
		ContextImport: "@",
	}
}

func profile() agent.Profile {
	re := regexp.MustCompile
	approval := `Apply this change\?|Allow execution of`
	return agent.Profile{
		Live:    "gemini --model {model}",
		Command: "gemini --model {model}", ContinueCommand: "gemini --resume latest --model {model}",
		Markers: agent.Markers{Ready: re(`Type your message or @path/to/file`), Busy: re(`esc to cancel`),
			// After the trust dialog the box stays drawn while gemini restarts: answering it again would type
			// into the next screen.
			Starting: re(`Gemini CLI is restarting`),
			Approval: re(approval), Question: re(`Enter to select`),
			Pasted: re(`\[Pasted Text: \d+ (lines|chars)`)},
		Dialogs: []agent.Dialog{
			agent.Choose("trust", `Do you trust the files in this folder\?`, `^Trust folder`),
			agent.Confirm("api-key", `Enter Gemini API Key`, "Enter"),
			// Only when gemini found the key: without one, the choice is the human's.
			agent.Choose("auth-method", `Existing API key detected \(GEMINI_API_KEY\)`, `^Use Gemini API Key`),
			agent.Permission("approval", approval, `^Allow once`),
		},
		Approve: regexp.MustCompile(`^Allow once`), ComposerStays: true, CompactCommand: "/compress", ContextFile: "GEMINI.md",
		OneEnter: true,
		// -p makes gemini headless and is appended to the prompt read from stdin, so it only points back at it.
		Headless:       "gemini -p \"Do what the text above asks.\" --skip-trust --output-format stream-json --approval-mode yolo --model {model}",
		HeadlessResume: "gemini --resume {session_id} -p \"Do what the text above asks.\" --skip-trust --output-format stream-json --approval-mode yolo --model {model}",
		HeadlessFormat: "gemini",
	}
}

// runEnv: gemini 0.61's shell tool runs git with GIT_CONFIG_GLOBAL=/dev/null, so the user's name and
// e-mail are gone and the agent's `git commit` fails ("Author identity unknown"; seen end to end in
// e2e realcli_e2e_test.go). ace passes the identity git finds in the working copy (the user's global one or the
// repository's own) as GIT_AUTHOR_* and GIT_COMMITTER_*, which gemini leaves alone.
//
// GEMINI_CLI_TRUST_WORKSPACE=true trusts the working copy ace made for this session only, as --skip-trust does
// headless: ace would answer the trust dialog "Trust folder" anyway, and that answer costs a restart of gemini
// (about 4 s, and a prompt pasted during it is lost) and an entry per working copy in the user's
// trustedFolders.json.
func runEnv(_, workdir string) (map[string]string, error) {
	env := agent.GitIdentity(workdir)
	env["GEMINI_CLI_TRUST_WORKSPACE"] = "true"
	return env, nil
}

// isolate: GEMINI_CLI_HOME with the working copy trusted, the GitHub MCP server, and the auth method chosen
// for the sign-in ace found (headless gemini exits 41 without one).
func isolate(h agent.IsolatedHome) (map[string]string, error) {
	if err := agent.MergeJSON(h.Files(), ".gemini/trustedFolders.json", func(m map[string]any) { m[h.Workdir] = "TRUST_FOLDER" }); err != nil {
		return nil, err
	}
	err := agent.MergeJSON(h.Files(), ".gemini/settings.json", func(m map[string]any) {
		if h.MCP.GitHubURL != "" {
			// gemini expands $VAR in settings: the file names the variable, the token stays in the env.
			agent.SetMCPServer(m, map[string]any{"httpUrl": h.MCP.GitHubURL,
				"headers": map[string]any{"Authorization": "Bearer $" + h.MCP.GitHubTokenEnv}})
		}
		kind := "gemini-api-key"
		if h.Auth.Method == "login" {
			kind = "oauth-personal"
		}
		agent.Object(agent.Object(m, "security"), "auth")["selectedType"] = kind
	})
	return map[string]string{"GEMINI_CLI_HOME": h.Home}, err
}
