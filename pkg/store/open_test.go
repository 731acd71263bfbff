package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

// Fresh stores opened at once: rounds fresh roots, each opened by procs processes with openers goroutines each.
const (
	openRounds  = 40
	openProcs   = 3
	openOpeners = 2
)

// TestFreshStoreOpensConcurrently starts processes that, all at once, open the same series of stores that do
// not exist yet, each from several goroutines, read and close them: every open succeeds. Without the store's
// lock file, 1–2 of 40 pairs of `ace ls` on fresh roots failed with "database is locked (SQLITE_BUSY)".
func TestFreshStoreOpensConcurrently(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var cmds []*exec.Cmd
	var gates []io.WriteCloser
	outs := make([]*lockedBuffer, openProcs)
	for i := range openProcs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperOpener$")
		cmd.Env = append(os.Environ(), "ACE_STORE_OPEN="+dir)
		outs[i] = &lockedBuffer{}
		cmd.Stdout, cmd.Stderr = outs[i], outs[i]
		gate, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, gates = append(cmds, cmd), append(gates, gate)
	}
	// The helpers wait on stdin: closing it starts them together, with this process as one more.
	for _, g := range gates {
		g.Close()
	}
	if err := openSeries(dir); err != nil {
		t.Errorf("test process: %v", err)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("helper %d (pid %d): %v\n%s", i, cmd.Process.Pid, err, outs[i])
		}
	}
}

// openSeries opens the stores <dir>/<round>/ace.db one round after another, each from openOpeners goroutines at
// once, reads from each and closes it: a process starting and ending, again and again.
func openSeries(dir string) error {
	var errs []error
	for round := range openRounds {
		path := filepath.Join(dir, strconv.Itoa(round), "ace.db")
		var wg sync.WaitGroup
		var mu sync.Mutex
		for range openOpeners {
			wg.Go(func() {
				err := openReadClose(path)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, fmt.Errorf("round %d: %w", round, err))
				}
			})
		}
		wg.Wait()
	}
	return errors.Join(errs...)
}

func openReadClose(path string) error {
	s, err := Open(context.Background(), path)
	if err != nil {
		return err
	}
	_, err = s.ListRuns(context.Background(), Filter{})
	return errors.Join(err, s.Close())
}

func TestHelperOpener(t *testing.T) {
	dir := os.Getenv("ACE_STORE_OPEN")
	if dir == "" {
		t.Skip("helper process only")
	}
	io.Copy(io.Discard, os.Stdin) // the gate
	if err := openSeries(dir); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
