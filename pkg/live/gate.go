package live

import "sync"

// gate holds the messages sent while a turn runs, for the turn after it. No CLI can be given a message mid-turn
// as a turn of its own: claude folds it into the running turn in words of its own, codex's turn/steer let a turn
// complete before its approved change was applied, gemini cancels the running prompt for it (see each adapter's
// StartTurn). Held here, each reaches the model byte-exact, as soon as the CLI can take it.
type gate struct {
	mu          sync.Mutex
	busy        bool     // a turn was started and has not ended
	interrupted bool     // ace interrupted the running turn
	held        []string // the messages sent while busy, in order
}

// enter reports whether text starts a turn now; while one runs it is held instead.
func (g *gate) enter(text string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.busy {
		g.held = append(g.held, text)
		return false
	}
	g.busy = true
	return true
}

// failed is a turn that did not start: no turn runs.
func (g *gate) failed() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.busy, g.interrupted = false, false
}

// interrupting marks the running turn as interrupted; false when none runs.
func (g *gate) interrupting() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.interrupted = g.busy
	return g.busy
}

// end is the running turn's end: whether it was interrupted.
func (g *gate) end() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	i := g.interrupted
	g.interrupted = false
	return i
}

// next takes the held messages, which start the next turn; nil when there are none, and no turn runs.
func (g *gate) next() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	held := g.held
	g.held = nil
	if len(held) == 0 {
		// An interruption between the turn's end and now found no turn to stop.
		g.busy, g.interrupted = false, false
		return nil
	}
	return held
}
