package live

import (
	"errors"
	"sync"
)

// Withdrawn is a Permission or Question (the ID it carried) that no longer waits for its answer: the CLI took it
// back (claude's control_cancel_request and codex's serverRequest/resolved for a request ace had not answered,
// both seen when the turn is interrupted), or ace answered it "cancelled" for the CLI (gemini's on Interrupt, as
// the Agent Client Protocol requires). Answering it now fails with ErrWithdrawn. The event may come after the
// turn's TurnDone (codex resolves its requests after turn/completed).
type Withdrawn struct{ ID string }

func (Withdrawn) event() {}

// The errors of answering a request that is no longer open.
var (
	ErrAnswered  = errors.New("live: the request was answered already")
	ErrWithdrawn = errors.New("live: the request was withdrawn")
)

// Once is an open request of the CLI's: it takes one answer, or is withdrawn first, whichever comes first (the
// CLI may withdraw it while a human's answer is on its way).
type Once struct {
	mu     sync.Mutex
	closed error // why it is no longer open; nil while it is
}

// Answer runs reply, which writes the answer to the CLI, unless the request is no longer open.
func (o *Once) Answer(reply func() error) error {
	o.mu.Lock()
	defer o.mu.Unlock() // held while reply writes: a withdrawal waits, then finds it answered
	if o.closed != nil {
		return o.closed
	}
	o.closed = ErrAnswered
	return reply()
}

// Withdraw closes the request; false when it was answered or withdrawn already (no Withdrawn event is due).
func (o *Once) Withdraw() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed != nil {
		return false
	}
	o.closed = ErrWithdrawn
	return true
}
