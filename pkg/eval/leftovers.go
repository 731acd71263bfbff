package eval

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/gofrs/flock"

	"github.com/aceworks/ace/pkg/headless"
)

// An eval directory keeps what ace eval run scored — plan.json (the items' numbers) and results/ — and, while it
// runs or after it was cut short, what it works with: items/ (each item's cut base and working copies), ace/ (its
// engine's root: store, runtime files, agents' homes and boxes), cache/ (its dependency caches). ace clean removes
// the latter once no ace eval run holds the directory's lock.

// lockName is the file an ace eval run holds locked (flock) in its directory for as long as it runs: the kernel
// lets go of it when the process ends, however it ends, so a held lock is a live eval run.
const lockName = "run.lock"

// kept are an eval directory's entries that are its results, never a leftover.
var kept = []string{"plan.json", "results", lockName}

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

// Dirs are the eval directories ace keeps under its root: <root>/eval/<owner>/<name>/run, the default of ace
// eval run (DirBeside of DefaultTasks).
func Dirs(root string) []string {
	found, _ := filepath.Glob(filepath.Join(root, "eval", "*", "*", "run"))
	var out []string
	for _, d := range found {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			out = append(out, d)
		}
	}
	return out
}

// Leftovers are the entries of eval directory dir that are not its results (plan.json, results/): what an eval
// run cut short left, or one that ended left of its engine. The caller holds dir's lock.
func Leftovers(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if !slices.Contains(kept, e.Name()) {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out, nil
}

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
