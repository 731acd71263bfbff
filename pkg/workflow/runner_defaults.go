package workflow

import (
	"context"

	"github.com/aceworks/ace/pkg/store"
)

// runnerDefaults are the Runner methods that some runner has nothing to do in (after River's WorkerDefaults):
// each runner embeds it and writes only what it does; a method it writes is the one called. A runner still does
// one of Type and Queue (text given to its agent must reach it).
type runnerDefaults struct{}

// Busy: never busy, so the monitor goes on to its files and Observe (a runner whose look at its agent is all
// in Observe: tmux, whose screen tells busy from idle).
func (runnerDefaults) Busy(context.Context, *store.Run) (Result, bool, error) {
	return Result{}, false, nil
}

// Type: the agent takes text only at its next turn (Queue).
func (runnerDefaults) Type(context.Context, *store.Run, string) error { return nil }

// Queue: text given to the agent reached it at once (Type) and needs no keeping.
func (runnerDefaults) Queue(*store.Run, string) {}

// Abandon: nothing a lost visit started is left unknown — a session, a host, is found again by its name (Start
// re-attaches to it).
func (runnerDefaults) Abandon(mine, fresh *store.Run) {}
