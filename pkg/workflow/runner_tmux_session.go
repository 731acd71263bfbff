package workflow

import (
	"context"
	"fmt"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tmuxops"
)

// launch starts (or, with respawn, restarts in place) the agent in session name with its secrets injected; with
// cont, in the conversation it last had in the working copy (agents.Profile.ContinueCommand).
func (t *tmuxRunner) launch(ctx context.Context, r *store.Run, name string, respawn, cont bool) error {
	prof, err := t.agent.profile(r)
	if err != nil {
		return err
	}
	spec, err := t.sessionSpec(ctx, r, prof, name, cont)
	if err != nil {
		return err
	}
	verb := "started"
	switch {
	case cont:
		verb = "resumed the conversation of"
	case respawn:
		verb = "restarted"
	}
	return t.panes.open(ctx, r, prof, spec, respawn, verb)
}

// sessionSpec builds everything tmux needs to run the agent: argv (no shell), plain env, secrets, home.
func (t *tmuxRunner) sessionSpec(ctx context.Context, r *store.Run, prof agents.Profile, name string, cont bool) (tmuxops.SessionSpec, error) {
	vars := t.agent.vars(r, prof)
	argv, err := prof.Argv(vars)
	if cont {
		argv, err = prof.ContinueArgv(vars)
	}
	if err != nil {
		return tmuxops.SessionSpec{}, Terminal(fmt.Errorf("agent %s: %w", prof.Name, err))
	}
	if err := checkExecutable(argv[0], r.Workdir, prof); err != nil {
		return tmuxops.SessionSpec{}, Terminal(err)
	}
	cmd, err := t.panes.sessionSpecOf(ctx, r, prof, name, argv, nil)
	return cmd.spec, err
}
