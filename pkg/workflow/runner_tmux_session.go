package workflow

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/sandbox"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tmuxops"
	"github.com/aceworks/ace/pkg/transcript"
)

// sessionName is the run's tmux session: the one it has, else ace-<repo>-<issue> — unless an unfinished run of
// another repository of the same name (a fork, another owner's namesake) holds that one: then the name carries
// a hash of owner/repo, so that neither run ever re-attaches to the other's agent.
func (t *tmuxRunner) sessionName(ctx context.Context, r *store.Run) (string, error) {
	e := t.e
	if r.Session != "" {
		return r.Session, nil
	}
	name := tmuxops.SessionName(r.Repo, r.Issue) + attemptSuffix(r)
	runs, err := e.o.Store.ListRuns(ctx, store.Filter{Statuses: []store.Status{store.StatusActive, store.StatusWaitingInput, store.StatusPausedLimit}})
	if err != nil {
		return "", fmt.Errorf("list active runs: %w", err)
	}
	for _, o := range runs {
		if o.Session == name && o.Repo != r.Repo {
			return tmuxops.QualifiedSessionName(r.Repo, r.Issue) + attemptSuffix(r), nil
		}
	}
	return name, nil
}

// launch starts (or, with respawn, restarts in place) the agent in session name with its secrets injected; with
// cont, in the conversation it last had in the working copy (agents.Profile.ContinueCommand).
func (t *tmuxRunner) launch(ctx context.Context, r *store.Run, name string, respawn, cont bool) error {
	prof, err := t.e.agent.profile(r)
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
	return t.open(ctx, r, prof, spec, respawn, verb)
}

// open starts spec's program in its session (or, with respawn, restarts it in place) and records that the run's
// agent lives there now.
func (t *tmuxRunner) open(ctx context.Context, r *store.Run, prof agents.Profile, spec tmuxops.SessionSpec, respawn bool, verb string) error {
	e := t.e
	var err error
	if respawn {
		err = t.tmux.Respawn(ctx, spec)
	} else {
		err = t.tmux.NewSession(ctx, spec)
	}
	t.invalidatePanes()
	if err != nil {
		return fmt.Errorf("start %s in tmux session %s: %w", prof.Name, spec.Name, err)
	}
	r.Session = spec.Name
	r.State.PastedAt, r.State.PastesLost = time.Time{}, 0 // a new agent process: nothing pasted into it yet
	markStart(r)
	r.State.TmuxServer, _ = t.tmux.ServerPID(ctx) // 0 when it cannot say: a session gone is then told less exactly
	e.agent.recordCLIVersion(ctx, r, prof)
	e.event(ctx, r, "session", fmt.Sprintf("%s %s in %s (attach: ace attach %d)", verb, prof.Name, spec.Name, r.Issue))
	return nil
}

// sessionSpec builds everything tmux needs to run the agent: argv (no shell), plain env, secrets, home.
func (t *tmuxRunner) sessionSpec(ctx context.Context, r *store.Run, prof agents.Profile, name string, cont bool) (tmuxops.SessionSpec, error) {
	e := t.e
	vars := e.agent.vars(r, prof)
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
	cmd, err := t.sessionSpecOf(ctx, r, prof, name, argv, nil)
	return cmd.spec, err
}

// sessionCommand is a tmux session's spec for an agent, whether it is boxed and the names of its secrets.
type sessionCommand struct {
	spec    tmuxops.SessionSpec
	boxed   bool
	secrets []string
}

// sessionSpecOf is sessionSpec for argv: the agent's CLI, or a program of ace's that hosts it (host), in the
// run's box where it has one (boxed).
func (t *tmuxRunner) sessionSpecOf(ctx context.Context, r *store.Run, prof agents.Profile, name string, argv []string, host *hosted) (sessionCommand, error) {
	e := t.e
	cmd, err := e.agent.commandOf(ctx, r, prof, e.agent.vars(r, prof), argv, true, host)
	if err != nil {
		return sessionCommand{}, err
	}
	tc := e.cfg.Tmux
	spec := tmuxops.SessionSpec{
		Name: name, Dir: r.Workdir, Argv: cmd.argv, Env: cmd.env, Secrets: cmd.secrets,
		Width: tc.Width, Height: tc.Height, HistoryLimit: tc.HistoryLimit,
		LogPath:    transcript.TerminalLog(e.o.Root, name),
		Launcher:   e.o.Launcher,
		RuntimeDir: filepath.Join(e.o.Root, "run"),
	}
	if cmd.boxed {
		// The box's launcher makes the env file the pane's whole environment (the tmux server's is ace's own):
		// plain variables and secrets travel in it alike.
		spec.Launcher, spec.Env, spec.Secrets = []string{e.o.Self, sandbox.LaunchArg}, nil, maps.Clone(cmd.env)
		maps.Copy(spec.Secrets, cmd.secrets)
	}
	return sessionCommand{spec: spec, boxed: cmd.boxed, secrets: slices.Sorted(maps.Keys(cmd.secrets))}, nil
}

// pane finds the session's pane in one list of every pane. The list is shared by all runs ticked within
// panesTTL, so a poll pass over many runs costs one `tmux list-panes`, not one per run.
func (t *tmuxRunner) pane(ctx context.Context, name string) (tmuxops.Pane, bool, error) {
	t.mu.Lock()
	panes, at, gen := t.panes, t.panesAt, t.panesGen
	t.mu.Unlock()
	if at.IsZero() || time.Since(at) > panesTTL {
		var err error
		if panes, err = t.tmux.Panes(ctx); err != nil {
			return tmuxops.Pane{}, false, fmt.Errorf("list tmux panes: %w", err)
		}
		t.mu.Lock()
		if t.panesGen == gen {
			// Only a listing that began after the last start or kill is shared: an older one may miss a session
			// another run has just started, which would read as an agent gone.
			t.panes, t.panesAt = panes, time.Now()
		}
		t.mu.Unlock()
	}
	for _, p := range panes {
		if p.Session == name {
			return p, true, nil
		}
	}
	return tmuxops.Pane{}, false, nil
}

// panesTTL bounds how stale a shared pane list may be.
const panesTTL = 250 * time.Millisecond

// invalidatePanes drops the shared pane list after ace itself started, restarted or killed a session.
func (t *tmuxRunner) invalidatePanes() {
	t.mu.Lock()
	t.panesAt = time.Time{}
	t.panesGen++
	t.mu.Unlock()
}
