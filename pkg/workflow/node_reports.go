package workflow

import (
	"context"

	"github.com/aceworks/ace/pkg/store"
)

// Runners report, nodes decide: a runner's look returns what it saw that is not its own business — a usage limit
// (Result.limit), an agent waiting for a human (Result.ask) — and the node that called it acts on it here, after
// every call of a runner that returns a Result. A runner never posts on the issue nor pauses a run itself.

// humanAsk is a runner's report that its agent waits for a human: msg is what the issue is asked, screen what
// the agent shows (its screen, its last words; empty when there is none to show).
type humanAsk struct {
	msg, screen string
	// inWords parks the run on what its agent said in words (toHumanInWords), not on a screen only its process
	// shows.
	inWords bool
	// asked is what the runner changes of the run once the human was asked, and only then: asking fails on a
	// tracker error, and the next visit, its retry, must find the run as this one did.
	asked func()
}

// askFor is a runner's report that a human is to be asked msg, with screen.
func askFor(msg, screen string) Result {
	return Result{ask: &humanAsk{msg: msg, screen: screen}}
}

// askInWords is askFor for an agent that said msg's matter in words (toHumanInWords).
func askInWords(msg, screen string) Result {
	return Result{ask: &humanAsk{msg: msg, screen: screen, inWords: true}}
}

// then is the report res with f done once the human was asked.
func (res Result) then(f func()) Result {
	if res.ask != nil {
		a := *res.ask
		a.asked = f
		res.ask = &a
	}
	return res
}

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
