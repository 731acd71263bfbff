package realcli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// slotPoll is how often a test waiting for a slot tries them again. A lock that frees wakes nobody (flock
// cannot wait on one of N files), and a case holds its slot for many seconds: a tenth of a second is noise.
const slotPoll = 100 * time.Millisecond

// Slot waits until one of the machine's real-CLI slots is free (see Slots) and holds it until t ends. go test
// runs packages as processes of their own, in parallel, each with its own -parallel: without a limit across
// them the number of real CLIs at once, and so each case's load, depended on which packages happened to
// overlap. A slot is a lock file under the temporary directory, taken with flock: the kernel frees it when its
// process ends, however it ends. Inside the loopback namespace (Enter) the test's outer process holds it.
func Slot(t testing.TB) {
	t.Helper()
	if os.Getenv(envInside) != "" {
		return
	}
	n, err := Slots()
	if err != nil {
		t.Fatalf("realcli: %v", err)
	}
	start := time.Now()
	f, i, err := takeSlot(t.Context(), slotDir(), n)
	if err != nil {
		t.Fatalf("realcli: wait for a real-CLI slot: %v", err)
	}
	t.Cleanup(func() { _ = f.Close() }) // closing the file drops its lock
	t.Logf("realcli: slot %d of %d after %s", i+1, n, time.Since(start).Round(time.Millisecond))
}

// holdSlot waits for one of the machine's slots as Slot does, for a caller that is not the test the slot is for
// (Cases): it returns the function that frees it. Inside the namespace there is nothing to hold.
func holdSlot(ctx context.Context) (release func(), err error) {
	if os.Getenv(envInside) != "" {
		return func() {}, nil
	}
	n, err := Slots()
	if err != nil {
		return nil, err
	}
	f, _, err := takeSlot(ctx, slotDir(), n)
	if err != nil {
		return nil, err
	}
	return func() { _ = f.Close() }, nil
}

// slotDir holds the slots' lock files: one directory for every test process of this user on the machine.
func slotDir() string {
	return filepath.Join(os.TempDir(), "ace-realcli-slots-"+strconv.Itoa(os.Getuid()))
}

// takeSlot locks the first free of the n lock files in dir, trying all of them every slotPoll until ctx ends,
// and returns it open (its lock held) and its index.
func takeSlot(ctx context.Context, dir string, n int) (*os.File, int, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, 0, err
	}
	for {
		for i := range n {
			f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("slot-%d.lock", i)), os.O_RDWR|os.O_CREATE, 0o600)
			if err != nil {
				return nil, 0, err
			}
			err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
			if err == nil {
				return f, i, nil
			}
			_ = f.Close()
			if !errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, 0, fmt.Errorf("lock %s: %w", f.Name(), err)
			}
		}
		select {
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		case <-time.After(slotPoll):
		}
	}
}
