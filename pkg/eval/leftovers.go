package eval

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/gofrs/flock"

	"github.com/aceworks/ace/pkg/headless"
	"github.com/aceworks/ace/pkg/runbox"
)

// An eval directory keeps what ace eval run scored — plan.json (the items' numbers) and results/ — and, while it
// runs or after it was cut short, what it works with: items/ (each item's cut base and working copies), ace/ (its
// engine's root: store, runtime files, agents' homes and boxes), cache/ (its dependency caches). ace clean removes
// the latter once no ace eval run holds the directory's lock.

// lockName is the file an ace eval run holds locked (flock) in its directory for as long as it runs: the kernel
// lets go of it when the process ends, however it ends, so a held lock is a live eval run.
const lockName = "run.lock"

// made are the entries ace eval run makes in its directory besides its results (plan.json, results/) and its
// lock: the leftovers, once no eval run holds the directory. Nothing else there is ace's: a directory given with
// --dir may hold the user's own files.
var made = []string{"items", "ace", "cache", "check"}

// ErrRunning is Lock's error (wrapped) when an ace eval run holds the directory.
var ErrRunning = errors.New("an ace eval run is running in it")

// Lock takes dir's lock for the caller (an eval run, or ace clean while it removes); unlock lets it go.
func Lock(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	l := flock.New(filepath.Join(dir, lockName))
	ok, err := l.TryLock()
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	if !ok {
		return nil, fmt.Errorf("%s: %w", dir, ErrRunning)
	}
	return func() { _ = l.Unlock() }, nil
}

// CheckDir refuses dir as an eval directory when it holds what ace eval run did not make (a missing or empty one
// is fine): ace clean removes what an eval run made there, so the directory must be the eval's alone.
func CheckDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !slices.Contains(made, e.Name()) && !slices.Contains([]string{"plan.json", "results", lockName}, e.Name()) {
			return fmt.Errorf("%s holds %s, which no ace eval run made there: an eval's directory is its own (ace clean "+
				"removes what the run made in it), give a new or empty one", dir, e.Name())
		}
	}
	return nil
}

// Dirs are the eval directories ace knows of: those under its root, <root>/eval/<owner>/<name>/run (the default
// of ace eval run, DirBeside of DefaultTasks), and those elsewhere that an ace eval run registered (Register).
func Dirs(root string) []string {
	found, _ := filepath.Glob(filepath.Join(root, "eval", "*", "*", "run"))
	links, _ := filepath.Glob(filepath.Join(root, registered, "*"))
	for _, l := range links {
		if d, err := os.Readlink(l); err == nil && filepath.IsAbs(d) && !slices.Contains(found, d) {
			found = append(found, d)
		}
	}
	var out []string
	for _, d := range found {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			out = append(out, d)
		}
	}
	return out
}

// registered is where Register keeps its links, under ace's root.
const registered = "eval-dirs"

// Register records eval directory dir (absolute) under ace's root — a link <root>/eval-dirs/<hash of dir> to it —
// unless it is one of the root's own eval directories, so that ace clean and doctor find an eval run's directory
// wherever --dir put it: its leftovers once it is over, its lock (the run still going) meanwhile.
func Register(root, dir string) error {
	if slices.Contains(Dirs(root), dir) {
		return nil
	}
	sum := sha256.Sum256([]byte(dir))
	link := filepath.Join(root, registered, hex.EncodeToString(sum[:8]))
	if d, err := os.Readlink(link); err == nil && d == dir {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
		return fmt.Errorf("register eval directory %s: %w", dir, err)
	}
	tmp := link + ".new"
	_ = os.Remove(tmp)
	if err := os.Symlink(dir, tmp); err != nil {
		return fmt.Errorf("register eval directory %s: %w", dir, err)
	}
	if err := os.Rename(tmp, link); err != nil {
		return fmt.Errorf("register eval directory %s: %w", dir, err)
	}
	return nil
}

// Leftovers are the entries ace eval run made in eval directory dir besides its results (made): what an eval run
// cut short left, or one that ended left of its engine — and, outside it, the directory its engine keeps its sockets
// in where dir is too deep for a socket's path (runbox.ShortSocket: its boxes' proxies', its live hosts'), which
// no other eval shares. The caller holds dir's lock.
func Leftovers(dir string) ([]string, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, err
	}
	var out []string
	for _, name := range made {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			out = append(out, filepath.Join(dir, name))
		}
	}
	return append(out, runbox.ShortSocketDirs(EngineRoot(dir))...), nil
}

// EngineRoot is the root of the engine of the ace eval run in directory dir: its store, runtime files, agents'
// homes and boxes.
func EngineRoot(dir string) string { return filepath.Join(dir, "ace") }

// Clean removes dir's leftovers, first ending the headless agents (and their supervisors) its engine started
// that are still there — an eval run killed mid-run leaves them running — each by its PID and start time (a PID
// that now names another process is left alone). The caller holds dir's lock.
func Clean(dir string) ([]string, error) {
	status, _ := filepath.Glob(filepath.Join(dir, "ace", "run", "headless", "*.status.json"))
	for _, f := range status {
		if st, err := headless.ReadStatus(f); err == nil {
			_ = headless.Proc{PID: st.AgentPID, Start: st.AgentStart}.Signal(syscall.SIGKILL)
			_ = headless.Proc{PID: st.SupervisorPID, Start: st.SupervisorStart}.Signal(syscall.SIGKILL)
		}
	}
	left, err := Leftovers(dir)
	if err != nil {
		return nil, err
	}
	var errs []error
	var removed []string
	for _, p := range left {
		if err := removeTree(p); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, p)
	}
	return removed, errors.Join(errs...)
}
