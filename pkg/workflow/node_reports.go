package workflow

import (
	"context"

	"github.com/aceworks/ace/pkg/store"
)

// Runners report, nodes decide: a runner's look returns what it saw that is not its own business — a usage limit
// (Result.limit), an agent waiting for a human (Result.ask) — and the node that called it acts on it here, after
// every call of a runner that returns a Result. A runner never posts on the issue nor pauses a run itself.

// reported acts on what a runner returned: a usage limit it saw is decided on (usageLimits.reported), a human it
// asks for is asked on the issue and the run waits for the answer; anything else passes through.
func (e *Engine) reported(ctx context.Context, r *store.Run, res Result, err error) (Result, error) {
	if err != nil {
		return res, err
	}
	if a := res.ask; a != nil {
		if err := e.humans.askHuman(ctx, r, a.msg, a.screen); err != nil {
			return Result{}, err
		}
		if a.asked != nil {
			a.asked()
		}
		if a.inWords {
			return toHumanInWords(r), nil
		}
		return toHuman(), nil
	}
	return e.limits.reported(ctx, r, res, nil)
}
