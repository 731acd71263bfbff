package claude_test

import (
	"context"
	"testing"

	"github.com/aceworks/ace/pkg/live"
	"github.com/aceworks/ace/pkg/live/claude"
	"github.com/aceworks/ace/pkg/live/livetest"
)

var claudeCase = livetest.Case{
	CLI: "claude",
	// The default permission mode asks before a write; reads need no permission.
	Argv: func(bin string) []string { return []string{bin, "--permission-mode", "default"} },
	Start: func(ctx context.Context, opts live.Options) (live.Conversation, error) {
		return claude.Start(ctx, opts)
	},
}

func TestLiveTwoTurns(t *testing.T) { livetest.TwoTurns(t, claudeCase) }
