package livetest

import (
	"context"
	"testing"

	"github.com/aceworks/ace/internal/realcli"
	"github.com/aceworks/ace/pkg/agents/claude"
	"github.com/aceworks/ace/pkg/agents/codex"
	"github.com/aceworks/ace/pkg/agents/gemini"
	"github.com/aceworks/ace/pkg/live"
	"github.com/aceworks/ace/pkg/modelserver"
)

// Claude, Codex and Gemini are how each CLI runs in the real-CLI tests: its adapter's and the live host's.
var (
	Claude = Case{
		CLI: "claude",
		// The default permission mode asks before a write; reads need no permission.
		Argv: func(bin string) []string { return []string{bin, "--permission-mode", "default"} },
		// The unified usage limit is a subscriber's: with an API key claude retries a 429 instead.
		Subscriber: func(t *testing.T, h *realcli.Home) {
			h.Unsetenv("ANTHROPIC_API_KEY")
			h.Setenv("CLAUDE_CODE_OAUTH_TOKEN", modelserver.OAuthToken)
		},
		Start: func(ctx context.Context, opts live.Options) (live.Conversation, error) {
			return claude.StartLive(ctx, opts)
		},
		Questions: true, LimitResets: true, MidTurn: claude.Adapter().LiveMidTurn,
	}
	Codex = Case{
		CLI: "codex",
		// A read-only sandbox runs the read (cat) unasked and asks before the write (apply_patch).
		Argv: func(bin string) []string {
			return []string{bin, "-c", `approval_policy="on-request"`, "-c", `sandbox_mode="read-only"`}
		},
		Start: func(ctx context.Context, opts live.Options) (live.Conversation, error) {
			return codex.StartLive(ctx, opts)
		},
		// request_user_input, on in the default mode (LiveArgs), asks with its options.
		Questions: true, LimitResets: true, MidTurn: codex.Adapter().LiveMidTurn,
	}
	Gemini = Case{
		CLI: "gemini",
		// The default approval mode reads unasked and asks before write_file.
		Argv: func(bin string) []string { return []string{bin, "--approval-mode", "default"} },
		// A fresh HOME trusts no folder: without trust gemini refuses to run headless (exit 55).
		Home: func(t *testing.T, h *realcli.Home) { h.Setenv("GEMINI_CLI_TRUST_WORKSPACE", "true") },
		Start: func(ctx context.Context, opts live.Options) (live.Conversation, error) {
			return gemini.StartLive(ctx, opts)
		},
		PromptOnly: true, MidTurn: gemini.Adapter().LiveMidTurn,
	}
)
