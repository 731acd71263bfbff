package runbox

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"

	"github.com/aceworks/ace/pkg/store"
)

// Where a run's box keeps what ace makes for it, and how it goes.

// runDir is where a run's box keeps what ace makes for it (the agent's home, the proxy's socket directory): under
// ace's root, which the box does not see except for what is mounted from there.
func (sb *Boxes) runDir(id int64) string { return boxDir(sb.o.Root, id) }

func boxDir(root string, id int64) string {
	return filepath.Join(root, "boxes", strconv.FormatInt(id, 10))
}

// Remove deletes what the run's box left, once its working copy is gone too.
func (sb *Boxes) Remove(ctx context.Context, r *store.Run) {
	sb.stop(r.ID)
	if err := Clean(sb.o.Root, r); err != nil {
		sb.o.Logger.WarnContext(ctx, "remove the run's box", "run", r.ID, "err", err)
	}
}

// Clean deletes what a finished run's box left under root (its agent's home, its socket's directory): ace
// clean removes it with the working copy.
func Clean(root string, r *store.Run) error {
	dirs := []string{boxDir(root, r.ID)}
	if b := r.State.Box; b != nil && b.Proxy != "" {
		dirs = append(dirs, filepath.Dir(b.Proxy))
	}
	var errs []error
	for _, d := range dirs {
		errs = append(errs, os.RemoveAll(d))
	}
	return errors.Join(errs...)
}

// maxSocketPath is the longest path a unix socket may have here (sun_path is 108 bytes, its NUL included).
const maxSocketPath = 107

// socketPath is where the run's proxy listens: <root>/boxes/<run>/egress/egress.sock, alone in its directory
// (the box sees the directory); ShortSocket where that is too long.
func (sb *Boxes) socketPath(id int64) (string, error) {
	return ShortSocket(sb.o.Root, filepath.Join(sb.runDir(id), "egress", "egress.sock"), strconv.FormatInt(id, 10), "egress.sock")
}

// ShortSocket is preferred, or where a root is too deep for a socket's path, under[...] in a directory of the
// user's own under the first of $XDG_RUNTIME_DIR, the temporary directory and /tmp short enough, named after the
// root, so that a restarted ace finds the same path.
func ShortSocket(root, preferred string, under ...string) (string, error) {
	if len(preferred) <= maxSocketPath {
		return preferred, nil
	}
	for _, dir := range shortDirs(root) {
		if p := filepath.Join(append([]string{dir}, under...)...); len(p) <= maxSocketPath {
			return p, privateDir(dir)
		}
	}
	return "", fmt.Errorf("no socket path short enough for %s (ace's root %s is too deep)", filepath.Base(preferred), root)
}

// shortDirs are the directories ShortSocket may keep root's sockets in, in the order it tries them.
func shortDirs(root string) []string {
	sum := sha256.Sum256([]byte(root))
	name := fmt.Sprintf("ace-%d-%x", os.Getuid(), sum[:6])
	var out []string
	for _, base := range []string{os.Getenv("XDG_RUNTIME_DIR"), os.TempDir(), "/tmp"} {
		if filepath.IsAbs(base) {
			out = append(out, filepath.Join(base, name))
		}
	}
	return out
}

// ShortSocketDirs are the directories ShortSocket made for root's sockets that are there — this user's own: what
// the engine whose root it is (an ace eval run's, under its directory) leaves outside its root, for ace clean to
// remove once that engine is over.
func ShortSocketDirs(root string) []string {
	var out []string
	for _, dir := range shortDirs(root) {
		fi, err := os.Lstat(dir)
		if err != nil || !fi.IsDir() || slices.Contains(out, dir) {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) == os.Getuid() {
			out = append(out, dir)
		}
	}
	return out
}

// privateDir makes dir, or checks that it is this user's private directory: another user could have made it
// first, to listen in the proxy's place.
func privateDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("the box's socket directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("the box's socket directory: %w", err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !fi.IsDir() || !ok || int(st.Uid) != os.Getuid() || fi.Mode().Perm() != 0o700 {
		return fmt.Errorf("the box's socket directory %s is not this user's private directory", dir)
	}
	return nil
}
