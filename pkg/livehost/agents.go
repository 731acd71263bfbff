package livehost

import (
	"context"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/live"
)

// agent is a CLI's live adapter, from its folder (pkg/agents/<cli>).
type agent struct {
	start   func(ctx context.Context, opts live.Options) (live.Conversation, error)
	midTurn live.MidTurn
}

// agentNamed is the live adapter of the built-in agent name.
func agentNamed(name string) (agent, bool) {
	a, ok := agents.AdapterOf(name)
	if !ok || a.Live == nil {
		return agent{}, false
	}
	return agent{start: a.Live, midTurn: a.LiveMidTurn}, true
}
