package realcli

import (
	"sync"
	"testing"
)

// Queue hands the machine's real-CLI slots to the cases of one test process in the order they asked for them,
// so that a test can start its longest cases first; as parallel subtests they took free slots in no order, and
// the last to start could be the longest. A case run by Cases waits for its slot in a goroutine of its own and
// only then becomes a subtest: it takes no place of go test's -parallel while it waits.
type Queue struct {
	turn sync.Mutex // held while waiting for a slot: those waiting get one in turn, first come first served
}

// Cases runs real-CLI cases as subtests of one test (Group): each once it holds a slot (Slot), all at once.
type Cases struct {
	q    *Queue
	t    *testing.T
	wait sync.WaitGroup
}

// Group returns the cases of t, the next group of the queue's test. Wait for them before t's function returns.
func (q *Queue) Group(t *testing.T) *Cases { return &Cases{q: q, t: t} }

// Run runs body as the subtest name of the group's test, with CLI c, once c is installed (Installed) and inside
// the loopback-only namespace (Enter), holding a slot of the machine's for the case's whole time. body must not
// call t.Parallel: the case runs from its own goroutine already, and its parent waits for it.
func (cs *Cases) Run(name string, c CLI, body func(t *testing.T)) {
	cs.wait.Add(1)
	go func() {
		defer cs.wait.Done()
		cs.q.turn.Lock()
		release, _, err := holdSlot(cs.t.Context())
		cs.q.turn.Unlock()
		if err != nil {
			cs.t.Errorf("realcli: wait for a real-CLI slot for %s: %v", name, err)
			return
		}
		defer release()
		cs.t.Run(name, func(t *testing.T) {
			Installed(t, c)
			if Enter(t) {
				body(t)
			}
		})
	}()
}

// EachPinned runs fn as a case for each pinned version of every CLI, named by its label (see Run).
func (cs *Cases) EachPinned(fn func(t *testing.T, c CLI)) {
	for _, c := range PinnedAll(cs.t) {
		cs.Run(c.Label(), c, func(t *testing.T) { fn(t, c) })
	}
}

// Wait returns once every case run so far has ended.
func (cs *Cases) Wait() { cs.wait.Wait() }
