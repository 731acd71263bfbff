package gemini_test

import (
	"context"
	"testing"

	"github.com/aceworks/ace/internal/realcli"
	"github.com/aceworks/ace/pkg/live"
	"github.com/aceworks/ace/pkg/live/gemini"
	"github.com/aceworks/ace/pkg/live/livetest"
)

var geminiCase = livetest.Case{
	CLI: "gemini",
	// The default approval mode reads unasked and asks before write_file.
	Argv: func(bin string) []string { return []string{bin, "--approval-mode", "default"} },
	// A fresh HOME trusts no folder: without trust gemini refuses to run headless (exit 55).
	Home: func(t *testing.T, h *realcli.Home) { h.Setenv("GEMINI_CLI_TRUST_WORKSPACE", "true") },
	Start: func(ctx context.Context, opts live.Options) (live.Conversation, error) {
		return gemini.Start(ctx, opts)
	},
	PromptOnly: true,
}

func TestLiveTwoTurns(t *testing.T) { livetest.TwoTurns(t, geminiCase) }

// gemini's quota error carries no reset time.
func TestLiveLimit(t *testing.T) { livetest.Limit(t, geminiCase, false) }

// gemini gets a message sent mid-turn as the next prompt: two turns.
func TestLiveMidTurn(t *testing.T) { livetest.MidTurn(t, geminiCase, 2) }
func TestLiveResume(t *testing.T)  { livetest.Resume(t, geminiCase) }

func TestLiveInterrupt(t *testing.T) { livetest.Interrupt(t, geminiCase) }
func TestLiveCrash(t *testing.T)     { livetest.Crash(t, geminiCase) }
