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

// requests are the CLI's requests waiting for their answer, by the protocol's key for each (claude's
// request_id, a JSON-RPC id).
type requests struct {
	mu   sync.Mutex
	open map[string]request
}

// request is an open request: the ID its event carries (the tool call's), its one answer, and how ace cancels it
// for the CLI (WithdrawAll).
type request struct {
	id     string
	once   *Once
	cancel func()
}

// Ask records the CLI's request key, for the event whose ID is id, as waiting for its answer: the Once it
// returns takes it. cancel, when not nil, answers the request "cancelled" (WithdrawAll).
func (f *Frame) Ask(key, id string, cancel func()) *Once {
	o := &Once{}
	f.requests.mu.Lock()
	defer f.requests.mu.Unlock()
	if f.requests.open == nil {
		f.requests.open = map[string]request{}
	}
	f.requests.open[key] = request{id: id, once: o, cancel: cancel}
	return o
}

// Answered forgets request key: its answer is on its way.
func (f *Frame) Answered(key string) {
	f.requests.mu.Lock()
	defer f.requests.mu.Unlock()
	delete(f.requests.open, key)
}

// Withdraw is the CLI taking back its request key: a Withdrawn event, unless it was answered or withdrawn
// already.
func (f *Frame) Withdraw(key string) {
	f.requests.mu.Lock()
	r, ok := f.requests.open[key]
	delete(f.requests.open, key)
	f.requests.mu.Unlock()
	if ok && r.once.Withdraw() {
		f.Emit(Withdrawn{ID: r.id})
	}
}

// WithdrawAll is ace withdrawing every request still open for the CLI: each gets its Withdrawn event. It returns
// their cancels, for the adapter to call once the events are out: what follows a cancellation (the turn's end)
// comes after them.
func (f *Frame) WithdrawAll() []func() {
	f.requests.mu.Lock()
	open := f.requests.open
	f.requests.open = nil
	f.requests.mu.Unlock()
	var cancels []func()
	for _, r := range open {
		if !r.once.Withdraw() {
			continue // answered meanwhile
		}
		f.Emit(Withdrawn{ID: r.id})
		if r.cancel != nil {
			cancels = append(cancels, r.cancel)
		}
	}
	return cancels
}
