package runbox

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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
	errs := []error{os.RemoveAll(boxDir(root, r.ID))}
	if b := r.State.Box; b != nil && b.Proxy != "" {
		errs = append(errs, os.RemoveAll(filepath.Dir(b.Proxy)), removeShortDir(root, b.Proxy))
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

// SocketDir makes the directory of sock, a path ShortSocket gave for root: under a short directory, that one
// checked to be this user's private directory first. Another run of the same root may remove the short directory,
// empty, at the same moment (RemoveSocketDir): it is made again then.
func SocketDir(root, sock string) error {
	dir := filepath.Dir(sock)
	short, ok := shortDirOf(root, sock)
	if !ok {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("the socket's directory: %w", err)
		}
		return nil
	}
	rel, err := filepath.Rel(short, dir)
	if err != nil {
		return fmt.Errorf("the socket's directory: %w", err)
	}
	const attempts = 10 // each lost race is another run's removal between two calls: a handful is plenty
	for range attempts {
		if err := privateDir(short); err != nil {
			return err
		}
		err = mkdirsIn(short, rel)
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return fmt.Errorf("the socket's directory %s: removed again each time it was made: %w", dir, err)
}

// mkdirsIn makes rel's directories one by one under base, which must be there (MkdirAll would make base too,
// without privateDir's check).
func mkdirsIn(base, rel string) error {
	d := base
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		if part == "." || part == "" {
			continue
		}
		d = filepath.Join(d, part)
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("the socket's directory: %w", err)
		}
	}
	return nil
}

// RemoveSocketDir removes the directory ShortSocket put sock in for root, when it put it outside root (a socket
// under root is in a directory of the run's that goes with the rest of it), and the short directory of root once
// nothing else is in it. What listened there is over: the directory would be left in the temporary one otherwise.
func RemoveSocketDir(root, sock string) error {
	short, ok := shortDirOf(root, sock)
	if !ok {
		return nil
	}
	rel, err := filepath.Rel(short, sock)
	if err != nil {
		return fmt.Errorf("the socket's directory: %w", err)
	}
	own := filepath.Join(short, strings.Split(rel, string(filepath.Separator))[0]) // the run's, right under short
	if own == sock {
		return errors.Join(ignoreMissing(os.Remove(sock)), removeShortDir(root, sock))
	}
	return errors.Join(os.RemoveAll(own), removeShortDir(root, sock))
}

// RemoveShortDirs removes root's short directories that are empty: an engine that closes leaves no directory of
// its own in the temporary one. A run's directory in there stays (a box outliving the engine sees it, and a
// restarted ace listens in it again).
func RemoveShortDirs(root string) error {
	var errs []error
	for _, dir := range ShortSocketDirs(root) {
		errs = append(errs, removeIfEmpty(dir))
	}
	return errors.Join(errs...)
}

// removeShortDir removes the short directory sock is in, if it is one of root's and empty.
func removeShortDir(root, sock string) error {
	short, ok := shortDirOf(root, sock)
	if !ok {
		return nil
	}
	return removeIfEmpty(short)
}

// removeIfEmpty removes dir unless something is in it: rmdir refuses a directory that is not empty, so a
// directory another run makes in it at the same moment either stops the removal or is made after it (SocketDir
// makes the short directory again then).
func removeIfEmpty(dir string) error {
	err := os.Remove(dir)
	if err == nil || errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
		return nil
	}
	return fmt.Errorf("the sockets' directory: %w", err)
}

func ignoreMissing(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// shortDirOf is the short directory of root's that sock is under, if it is under one.
func shortDirOf(root, sock string) (string, bool) {
	for _, dir := range shortDirs(root) {
		if strings.HasPrefix(sock, dir+string(filepath.Separator)) {
			return dir, true
		}
	}
	return "", false
}

// privateDir makes dir, or checks that it is this user's private directory: another user could have made it
// first, to listen in the proxy's place.
func privateDir(dir string) error {
	var fi fs.FileInfo
	err := fs.ErrNotExist
	// Another run of the same root may remove the directory, empty, between its making and its check: make it again.
	for range 10 {
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("the box's socket directory: %w", err)
		}
		if fi, err = os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("the box's socket directory: %w", err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !fi.IsDir() || !ok || int(st.Uid) != os.Getuid() || fi.Mode().Perm() != 0o700 {
		return fmt.Errorf("the box's socket directory %s is not this user's private directory", dir)
	}
	return nil
}
