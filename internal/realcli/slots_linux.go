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
	start := time.Now()
	release, slot, err := holdSlot(t.Context())
	if err != nil {
		t.Fatalf("realcli: wait for a real-CLI slot: %v", err)
	}
	t.Cleanup(release)
	t.Logf("realcli: slot %s after %s", slot, time.Since(start).Round(time.Millisecond))
}

// holdSlot waits for one of the machine's slots (see Slot) and returns the function that frees it (closing its
// file drops its lock) and which slot it is ("3 of 8"); Cases holds one for a case before the case's test
// exists. Inside the namespace there is nothing to hold.
func holdSlot(ctx context.Context) (release func(), slot string, err error) {
	if os.Getenv(envInside) != "" {
		return func() {}, "", nil
	}
	n, err := Slots()
	if err != nil {
		return nil, "", err
	}
	f, i, err := takeSlot(ctx, slotDir(), n)
	if err != nil {
		return nil, "", err
	}
	return func() { _ = f.Close() }, fmt.Sprintf("%d of %d", i+1, n), nil
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
