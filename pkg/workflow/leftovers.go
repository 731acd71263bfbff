package workflow

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/procs"
	"github.com/aceworks/ace/pkg/runbox"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tmuxops"
)

// What a crashed ace leaves on its host that nothing will use: ace doctor names it, ace clean removes it.

// Leftover is one such thing: what it is, its name, and why nothing will use it.
type Leftover struct {
	Kind, Name, Why string
}

func (l Leftover) String() string { return l.Kind + " " + l.Name + " (" + l.Why + ")" }

// HostTmux is ace's tmux server as ace doctor and ace clean look after it.
type HostTmux interface {
	Terminals
	// Leftovers lists what dead aces left on the server; Recover ends it.
	Leftovers(ctx context.Context) (tmuxops.Recovery, error)
	Recover(ctx context.Context) (tmuxops.Recovery, error)
}

// CrashLeftovers lists what crashed aces left under root and on t, runs being every run of the store: runtime
// files no start will read (env files hold an agent's secrets), the control clients and sessions of dead aces
// and a tmux server they left unusable, agent sessions that no unfinished run owns (dead panes of runs that are
// over among them), and the sockets of runs that are over (or gone) that nobody listens on. With remove it
// removes them, and lists what it removed.
func CrashLeftovers(ctx context.Context, root string, t HostTmux, runs []*store.Run, remove bool) ([]Leftover, error) {
	var out []Leftover
	var errs []error
	dir := filepath.Join(root, "run")
	var files []tmuxops.Leftover
	if remove {
		files, _ = tmuxops.SweepRuntime(dir)
	} else {
		files, _ = tmuxops.RuntimeLeftovers(dir, time.Now())
	}
	for _, f := range files {
		kind := "env file"
		if strings.HasPrefix(filepath.Base(f.Path), "headless-") {
			kind = "headless spec"
		}
		out = append(out, Leftover{Kind: kind, Name: f.Path, Why: f.Why})
	}

	var rec tmuxops.Recovery
	var err error
	if remove {
		rec, err = t.Recover(ctx)
	} else {
		rec, err = t.Leftovers(ctx)
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("tmux: %w", err))
	}
	if rec.Unusable {
		out = append(out, Leftover{Kind: "tmux server", Name: fmt.Sprintf("%d on socket %s", rec.Server, rec.Socket),
			Why: "refuses every client: half-exited, a kill-server waiting for the control clients of dead aces"})
	}
	for _, o := range rec.Clients {
		out = append(out, Leftover{Kind: "tmux control client", Name: strconv.Itoa(o.PID), Why: fmt.Sprintf("of ace %d, which is gone", o.Owner)})
	}
	for _, s := range rec.Sessions {
		out = append(out, Leftover{Kind: "tmux control session", Name: s, Why: "its ace is gone"})
	}

	owned := map[string]bool{}
	for _, r := range store.LatestPerIssue(runs) {
		if !r.Status.Terminal() {
			owned[r.Session] = true
		}
	}
	sessions, err := Orphans(ctx, t, owned, remove)
	for _, s := range sessions {
		out = append(out, Leftover{Kind: "tmux session", Name: s, Why: "no unfinished run owns it"})
	}
	if err != nil {
		errs = append(errs, err)
	}

	for _, s := range staleSockets(root, runs) {
		if remove {
			if err := removeSocket(s.Name); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		out = append(out, s)
	}
	return out, errors.Join(errs...)
}

// removeSocket removes the unix socket file at path, if that is what is there.
func removeSocket(path string) error {
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode().Type() != fs.ModeSocket {
		return nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// runOfSocket finds the run a socket under root/boxes/<run>/ or root/live/<session>-run<run>/ is for.
var runOfSocket = regexp.MustCompile(`(?:/boxes/(\d+)/|-run(\d+)/host\.sock$)`)

// staleSockets are the sockets of runs' proxies (egress and box reports) and live hosts that nobody listens on,
// of runs that are over or no longer in the store: a killed ace or host leaves its socket file behind. A socket
// of an unfinished run waits for the next ace, which listens on it again.
func staleSockets(root string, runs []*store.Run) []Leftover {
	byID := map[int64]*store.Run{}
	paths := map[string]*store.Run{}
	for _, r := range runs {
		byID[r.ID] = r
		if b := r.State.Box; b != nil && b.Proxy != "" {
			paths[b.Proxy], paths[runbox.ReportSocket(b.Proxy)] = r, r
		}
		if r.Runner == store.RunnerLive {
			if _, _, sock, _, err := liveFilesOf(root, r); err == nil {
				paths[sock] = r
			}
		}
	}
	for _, pattern := range []string{filepath.Join(root, "boxes", "*", "egress", "*"), filepath.Join(root, liveDir, "*", hostSocket)} {
		found, _ := filepath.Glob(pattern)
		for _, p := range found {
			if _, ok := paths[p]; !ok {
				paths[p] = nil
				if m := runOfSocket.FindStringSubmatch(p); m != nil {
					id, _ := strconv.ParseInt(m[1]+m[2], 10, 64)
					paths[p] = byID[id]
				}
			}
		}
	}
	var out []Leftover
	for p, r := range paths {
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode().Type() != fs.ModeSocket || (r != nil && !r.Status.Terminal()) || len(procs.Listeners(p)) > 0 {
			continue
		}
		why := "its run is no longer in the store, and nobody listens on it"
		if r != nil {
			why = fmt.Sprintf("run %d (%s#%d) is %s, and nobody listens on it", r.ID, r.Repo, r.Issue, r.Status)
		}
		out = append(out, Leftover{Kind: "socket", Name: p, Why: why})
	}
	slices.SortFunc(out, func(a, b Leftover) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// FinishedAttempts are the best-of attempts whose working copies (<issue>-<k>) ace clean removes with their
// parent's: attempts that are over, of a parent that is its issue's latest run and is done — or, with all, failed
// or cancelled, whose attempts may hold work that was never pushed. An older parent's attempts are left to the
// latest run's: a later best-of run of the issue makes its attempts in the same copies.
func FinishedAttempts(runs []*store.Run, all bool) []*store.Run {
	finished := map[int64]bool{}
	for _, r := range store.LatestPerIssue(runs) {
		if r.State.BestOf != nil && r.Status.Terminal() && (r.Status == store.StatusDone || all) {
			finished[r.ID] = true
		}
	}
	var out []*store.Run
	for _, r := range runs {
		if a := r.State.AttemptOf; a != nil && finished[a.Parent] && r.Status.Terminal() && r.Workdir != "" {
			out = append(out, r)
		}
	}
	return out
}
