package runbox

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
)

// deepBoxes are boxes whose root is too deep for a socket's path, and the short directory their sockets go to.
func deepBoxes(t *testing.T) (*Boxes, string) {
	t.Helper()
	root := filepath.Join(t.TempDir(), strings.Repeat("a-deep-directory/", 6), "root")
	sum := sha256.Sum256([]byte(root))
	short := filepath.Join(os.TempDir(), fmt.Sprintf("ace-%d-%x", os.Getuid(), sum[:6]))
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		short = filepath.Join(d, filepath.Base(short))
	}
	t.Cleanup(func() { os.RemoveAll(short) }) // a failed test leaves nothing behind either
	sb := New(Options{Config: config.Default(), Root: root, Store: &eventsOnly{},
		Profile: func(*store.Run) (agents.Profile, error) { p, _ := agents.Builtin("claude"); return p, nil }})
	return sb, short
}

func boxedRun(t *testing.T, sb *Boxes, id int64) *store.Run {
	t.Helper()
	sock, err := sb.socketPath(id)
	if err != nil {
		t.Fatal(err)
	}
	return &store.Run{ID: id, Repo: "acme/widgets", Agent: "claude", Status: store.StatusActive,
		State: store.RunState{Box: &store.BoxState{Proxy: sock}}}
}

func gone(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s is still there (%v)", path, err)
	}
}

// TestShortSocketDirGoes: the socket directory a box of a deep root has outside it goes with the box, and the
// root's short directory with its last box; a run that ends leaves no directory there either.
func TestShortSocketDirGoes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sb, short := deepBoxes(t)
	a, b, c := boxedRun(t, sb, 1), boxedRun(t, sb, 2), boxedRun(t, sb, 3)
	if got := filepath.Dir(filepath.Dir(a.State.Box.Proxy)); got != short {
		t.Fatalf("socket %s, want it under %s", a.State.Box.Proxy, short)
	}
	for _, r := range []*store.Run{a, b, c} {
		if err := sb.Ensure(ctx, r); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(r.State.Box.Proxy); err != nil {
			t.Fatalf("the proxy's socket: %v", err)
		}
	}
	sb.Remove(ctx, a)
	gone(t, filepath.Join(short, "1"))
	if _, err := os.Lstat(filepath.Join(short, "2")); err != nil {
		t.Fatalf("another run's socket directory went too: %v", err)
	}
	c.Status = store.StatusFailed
	sb.Keep(ctx, c)
	gone(t, filepath.Join(short, "3"))
	sb.Remove(ctx, b)
	gone(t, short)
}

// TestShortSocketDirAtClose: an engine that closes removes the root's short directory once no run's socket
// directory is in it; one of an unfinished run's box stays, for a restarted ace to listen in again.
func TestShortSocketDirAtClose(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sb, short := deepBoxes(t)
	r := boxedRun(t, sb, 4)
	if err := sb.Ensure(ctx, r); err != nil {
		t.Fatal(err)
	}
	sb.Close()
	if _, err := os.Lstat(filepath.Join(short, "4")); err != nil {
		t.Fatalf("an unfinished run's socket directory went at close: %v", err)
	}
	sb.Remove(ctx, r)
	gone(t, short)

	sb, short = deepBoxes(t)
	boxedRun(t, sb, 5) // its plan made the short directory; no proxy was served
	sb.Close()
	gone(t, short)
}

// TestShortSocketDirRace: runs of one root making their socket directories while others remove theirs (and the
// root's short directory, empty for a moment) all get theirs.
func TestShortSocketDirRace(t *testing.T) {
	t.Parallel()
	sb, short := deepBoxes(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			for range 200 {
				sock, err := sb.socketPath(int64(i))
				if err == nil {
					err = SocketDir(sb.o.Root, sock)
				}
				if err == nil {
					_, err = os.Stat(filepath.Dir(sock))
				}
				if err == nil {
					err = RemoveSocketDir(sb.o.Root, sock)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	gone(t, short)
}
