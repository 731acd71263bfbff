package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aceworks/ace/pkg/eval"
	"github.com/aceworks/ace/pkg/tmuxops"
	"github.com/aceworks/ace/pkg/workflow"
)

// evalLeftovers are what ace eval runs left (an eval run killed mid-run, or one whose engine's files outlived it)
// in the eval directories ace keeps under its root (eval.Dirs): each one's working copies, cut bases, engine root
// and caches — never its plan.json or results/ — and its agent sessions: every session on its engine's tmux
// socket (eval.Socket, the directory's own), and on the socket all evals shared before (eval.SharedSocket) those
// started in the directory. A directory an eval run holds is running and left alone, and so is the shared socket
// while any is. With remove it removes them (holding each directory's lock, so that no eval run starts there
// meanwhile) and lists what it removed.
func evalLeftovers(ctx context.Context, app *App, remove bool) ([]string, error) {
	var out []string
	var errs []error
	running := false
	shared := eval.SharedSocket(app.Config.Tmux.Socket)
	tm := tmuxops.New(shared)
	ended := map[string]bool{}
	for _, dir := range eval.Dirs(app.Config.Workspace.Root) {
		unlock, err := eval.Lock(dir)
		if errors.Is(err, eval.ErrRunning) {
			running = true
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		// Its sessions first (their agents, and the live runner's hosts, work in its items).
		own := eval.Socket(app.Config.Tmux.Socket, dir)
		sessions, err := evalSessionsOn(ctx, tmuxops.New(own), remove)
		if err != nil {
			errs = append(errs, err)
		}
		for _, s := range sessions {
			out = append(out, fmt.Sprintf("tmux session %s on socket %s (of the ace eval run in %s, which is over)", s, own, dir))
		}
		// An older ace's, on the shared socket, even while another eval runs there.
		sessions, err = evalSessionsIn(ctx, tm, dir, remove)
		if err != nil {
			errs = append(errs, err)
		}
		for _, s := range sessions {
			ended[s] = true
			out = append(out, fmt.Sprintf("tmux session %s on socket %s (of the ace eval run in %s, which is over)", s, shared, dir))
		}
		var left []string
		if remove {
			left, err = eval.Clean(dir)
		} else {
			left, err = eval.Leftovers(dir)
		}
		unlock()
		if err != nil {
			errs = append(errs, err)
		}
		for _, p := range left {
			out = append(out, p+" (left by an ace eval run; its results are kept)")
		}
	}
	if !running {
		sessions, err := workflow.Orphans(ctx, tm, ended, remove)
		if err != nil {
			errs = append(errs, fmt.Errorf("the eval runs' tmux sessions: %w", err))
		}
		for _, s := range sessions {
			out = append(out, fmt.Sprintf("tmux session %s on socket %s (of an ace eval run that is over)", s, shared))
		}
	}
	return out, errors.Join(errs...)
}

// evalSessionsOn are the sessions on an eval's own socket, whose eval is over: all of them are its. With end it
// ends each, and every process it started, by PID, and then the socket's server.
func evalSessionsOn(ctx context.Context, tm *tmuxops.Client, end bool) ([]string, error) {
	sessions, err := workflow.Orphans(ctx, tm, nil, end)
	if err != nil {
		return sessions, fmt.Errorf("the eval's tmux sessions: %w", err)
	}
	if end && len(sessions) > 0 {
		if err := tm.KillServer(ctx); err != nil {
			return sessions, fmt.Errorf("the eval's tmux server: %w", err)
		}
	}
	slices.Sort(sessions)
	return sessions, nil
}

// evalSessionsIn are the sessions on the shared eval socket that were started in eval directory dir (a run's
// working copy is in its items/): those of the eval run that held it, its agents' and its live runner's hosts.
// With end it ends each, and every process it started, by PID.
func evalSessionsIn(ctx context.Context, tm *tmuxops.Client, dir string, end bool) ([]string, error) {
	dirs, err := tm.SessionDirs(ctx, "ace-")
	if err != nil {
		return nil, fmt.Errorf("the eval runs' tmux sessions: %w", err)
	}
	var out []string
	for name, d := range dirs {
		if rel, err := filepath.Rel(dir, d); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			continue
		}
		if end {
			if err := tm.Kill(ctx, name); err != nil {
				return out, fmt.Errorf("end session %s: %w", name, err)
			}
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out, nil
}
