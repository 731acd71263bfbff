package livehost

import (
	"context"

	"github.com/aceworks/ace/pkg/live"
	"github.com/aceworks/ace/pkg/live/claude"
	"github.com/aceworks/ace/pkg/live/codex"
	"github.com/aceworks/ace/pkg/live/gemini"
)

// How a CLI takes a message sent while a turn runs (see each adapter's Send): the host's Busy follows it.
const (
	joinsTurn = iota // claude: the running turn reads it; no turn of its own follows
	oneTurn          // codex: every message queued meanwhile starts one next turn, together
	turnEach         // gemini: each queued message is a turn of its own, one after another
)

// agent is one adapter of pkg/live.
type agent struct {
	start   func(ctx context.Context, opts live.Options) (live.Conversation, error)
	midTurn int
}

var agents = map[string]agent{
	"claude": {start: adapt(claude.Start), midTurn: joinsTurn},
	"codex":  {start: adapt(codex.Start), midTurn: oneTurn},
	"gemini": {start: adapt(gemini.Start), midTurn: turnEach},
}

// adapt turns an adapter's Start into one returning the interface, and a failed start into a nil one (not a
// nil *Conv in a non-nil interface).
func adapt[C live.Conversation](start func(context.Context, live.Options) (C, error)) func(context.Context, live.Options) (live.Conversation, error) {
	return func(ctx context.Context, opts live.Options) (live.Conversation, error) {
		c, err := start(ctx, opts)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
}
