package claude_test

import (
	"context"
	"testing"

	"github.com/aceworks/ace/internal/realcli"
	"github.com/aceworks/ace/pkg/live"
	"github.com/aceworks/ace/pkg/live/claude"
	"github.com/aceworks/ace/pkg/live/livetest"
	"github.com/aceworks/ace/pkg/modelserver"
)

var claudeCase = livetest.Case{
	CLI: "claude",
	// The default permission mode asks before a write; reads need no permission.
	Argv: func(bin string) []string { return []string{bin, "--permission-mode", "default"} },
	// The unified usage limit is a subscriber's: with an API key claude retries a 429 instead.
	Subscriber: func(t *testing.T, h *realcli.Home) {
		h.Unsetenv("ANTHROPIC_API_KEY")
		h.Setenv("CLAUDE_CODE_OAUTH_TOKEN", modelserver.OAuthToken)
	},
	Start: func(ctx context.Context, opts live.Options) (live.Conversation, error) {
		return claude.Start(ctx, opts)
	},
}

func TestLiveTwoTurns(t *testing.T) { livetest.TwoTurns(t, claudeCase) }
func TestLiveQuestion(t *testing.T) { livetest.Question(t, claudeCase) }
func TestLiveLimit(t *testing.T)    { livetest.Limit(t, claudeCase, true) }

// claude adds a message sent mid-turn to the running turn: one turn.
func TestLiveMidTurn(t *testing.T) { livetest.MidTurn(t, claudeCase, 1) }
func TestLiveResume(t *testing.T)  { livetest.Resume(t, claudeCase) }

func TestLiveInterrupt(t *testing.T) { livetest.Interrupt(t, claudeCase) }
func TestLiveCrash(t *testing.T)     { livetest.Crash(t, claudeCase) }
