package codex_test

import (
	"context"
	"testing"

	"github.com/aceworks/ace/pkg/live"
	"github.com/aceworks/ace/pkg/live/codex"
	"github.com/aceworks/ace/pkg/live/livetest"
)

var codexCase = livetest.Case{
	CLI: "codex",
	// A read-only sandbox runs the read (cat) unasked and asks before the write (apply_patch).
	Argv: func(bin string) []string {
		return []string{bin, "-c", `approval_policy="on-request"`, "-c", `sandbox_mode="read-only"`}
	},
	Start: func(ctx context.Context, opts live.Options) (live.Conversation, error) {
		return codex.Start(ctx, opts)
	},
}

func TestLiveTwoTurns(t *testing.T) { livetest.TwoTurns(t, codexCase) }
func TestLiveLimit(t *testing.T)    { livetest.Limit(t, codexCase, true) }

// codex gets a message sent mid-turn as the next turn: two turns.
func TestLiveMidTurn(t *testing.T) { livetest.MidTurn(t, codexCase, 2) }
func TestLiveResume(t *testing.T)  { livetest.Resume(t, codexCase) }

func TestLiveInterrupt(t *testing.T) { livetest.Interrupt(t, codexCase) }
func TestLiveCrash(t *testing.T)     { livetest.Crash(t, codexCase) }
