// Package testkit holds what ace's test packages share: waiting on a condition, a buffer a process writes while
// the test reads it, and a TestMain for test binaries that also play the programs their tests start (ace itself,
// the tmux launcher, the fake agent).
//
// It imports the standard library only, so that any package's tests, white-box ones too, can use it; what is
// particular to a package (cli.Child, pgtest.Main) is passed in.
package testkit

import (
	"bytes"
	"sync"
	"testing"
	"time"
)

// WaitFor polls cond until it holds and fails t once d has passed without it; what says what was awaited. d
// bounds a hung test, it is no timing assertion: cond is polled every few milliseconds at first, then every
// 100 ms.
func WaitFor(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for pause := 5 * time.Millisecond; !cond(); pause = min(2*pause, 100*time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %s waiting for: %s", d, what)
		}
		time.Sleep(pause)
	}
}

// Buffer is a bytes.Buffer that one goroutine may write (a process's output) while another reads it.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String is what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
