package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/aceworks/ace/pkg/eval"
	"github.com/aceworks/ace/pkg/tmuxops"
	"github.com/aceworks/ace/pkg/workflow"
)

// evalLeftovers are what ace eval runs left (an eval run killed mid-run, or one whose engine's files outlived it)
// in the eval directories ace keeps under its root (eval.Dirs): each one's working copies, cut bases, engine root
// and caches — never its plan.json or results/ — and the agent sessions on the eval engines' tmux socket. A
// directory an eval run holds is running and left alone, and so is the socket while any is. With remove it
// removes them (holding each directory's lock, so that no eval run starts there meanwhile) and lists what it
// removed.
func evalLeftovers(ctx context.Context, app *App, remove bool) ([]string, error) {
	var out []string
	var errs []error
	running := false
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
		socket := app.Config.Tmux.Socket + "-eval"
		sessions, err := workflow.Orphans(ctx, tmuxops.New(socket), nil, remove)
		if err != nil {
			errs = append(errs, fmt.Errorf("the eval runs' tmux sessions: %w", err))
		}
		for _, s := range sessions {
			out = append(out, fmt.Sprintf("tmux session %s on socket %s (of an ace eval run that is over)", s, socket))
		}
	}
	return out, errors.Join(errs...)
}
