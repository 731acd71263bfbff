package live

import "sync"

// Stream is the events channel of a conversation, written by its adapter. Emit never blocks: events queue
// without bound until the consumer takes them, because the goroutine that emits is the one that reads the CLI's
// output, and it must go on reading replies to the requests the consumer makes meanwhile (a consumer blocked in
// Send while the CLI's reader waited for it to take an event would deadlock).
type Stream struct {
	out  chan Event
	wake chan struct{}
	quit chan struct{}

	mu       sync.Mutex
	q        []Event
	ended    bool
	quitOnce sync.Once
}

// NewStream starts a stream.
func NewStream() *Stream {
	s := &Stream{out: make(chan Event), wake: make(chan struct{}, 1), quit: make(chan struct{})}
	go s.pump()
	return s
}

// Events is the consumer's side.
func (s *Stream) Events() <-chan Event { return s.out }

// Emit queues e; after End it is dropped.
func (s *Stream) Emit(e Event) {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.q = append(s.q, e)
	s.mu.Unlock()
	s.poke()
}

// End closes the channel once the queued events are taken.
func (s *Stream) End() {
	s.mu.Lock()
	s.ended = true
	s.mu.Unlock()
	s.poke()
}

// Abandon drops what is queued and closes the channel at once: the consumer has gone (Close).
func (s *Stream) Abandon() {
	s.End()
	s.quitOnce.Do(func() { close(s.quit) })
}

func (s *Stream) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Stream) pump() {
	defer close(s.out)
	for {
		s.mu.Lock()
		if len(s.q) > 0 {
			e := s.q[0]
			s.q[0] = nil
			s.q = s.q[1:]
			s.mu.Unlock()
			select {
			case s.out <- e:
				continue
			case <-s.quit:
				return
			}
		}
		ended := s.ended
		s.mu.Unlock()
		if ended {
			return
		}
		select {
		case <-s.wake:
		case <-s.quit:
			return
		}
	}
}
