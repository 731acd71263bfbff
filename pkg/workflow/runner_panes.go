package workflow

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/sandbox"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tmuxops"
	"github.com/aceworks/ace/pkg/transcript"
)

// panes are the tmux sessions the agents of the tmux and the live runner live in: a run's session named, opened
// (or its dead pane respawned) with the agent's command, found in the pane list, read, stopped, and what ended it
// told. Both runners hold the one panes; what happens in a pane — a CLI's own screen, a live host — is each
// runner's own.
type panes struct {
	core paneEvents
	runs runLister // the store's runs: a session name another repository's run holds (sessionName)
	// agent makes the agent's command and records its CLI's version when its session opens.
	agent    *runAgent
	cfg      *config.Config // tmux: the sessions' size and scrollback
	root     string         // ace's root: the panes' transcripts and runtime files
	self     string         // ace's executable: a boxed pane's launcher (`ace __box-launch`)
	launcher []string       // Options.Launcher: the env-file launcher in front of an unboxed agent
	// tmux is the tmux server the agents run in; nothing else in ace's graph talks to it (the tmux runner reads
	// and types into its sessions through this client).
	tmux Sessions

	mu     sync.Mutex
	list   []tmuxops.Pane // the last pane list, shared by runs ticked close together
	listAt time.Time
	gen    uint64 // counts invalidations: a listing begun before one must not be cached after it
}

// paneEvents is what the panes need of the engine's core: the session events, recorded as a step records them.
type paneEvents interface {
	event(ctx context.Context, r *store.Run, kind EventKind, msg string)
}

// sessionName is the run's tmux session: the one it has, else ace-<repo>-<issue> — unless an unfinished run of
// another repository of the same name (a fork, another owner's namesake) holds that one: then the name carries
// a hash of owner/repo, so that neither run ever re-attaches to the other's agent.
func (p *panes) sessionName(ctx context.Context, r *store.Run) (string, error) {
	if r.Session != "" {
		return r.Session, nil
	}
	name := tmuxops.SessionName(r.Repo, r.Issue) + attemptSuffix(r)
	runs, err := p.runs.ListRuns(ctx, store.Filter{Statuses: []store.Status{store.StatusActive, store.StatusWaitingInput, store.StatusPausedLimit}})
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

// open starts spec's program in its session (or, with respawn, restarts it in place) and records that the run's
// agent lives there now.
func (p *panes) open(ctx context.Context, r *store.Run, prof agents.Profile, spec tmuxops.SessionSpec, respawn bool, verb string) error {
	var err error
	if respawn {
		err = p.tmux.Respawn(ctx, spec)
	} else {
		err = p.tmux.NewSession(ctx, spec)
	}
	p.invalidate()
	if err != nil {
		return fmt.Errorf("start %s in tmux session %s: %w", prof.Name, spec.Name, err)
	}
	r.Session = spec.Name
	r.State.PastedAt, r.State.PastesLost = time.Time{}, 0 // a new agent process: nothing pasted into it yet
	markStart(r)
	r.State.TmuxServer, _ = p.tmux.ServerPID(ctx) // 0 when it cannot say: a session gone is then told less exactly
	p.agent.recordCLIVersion(ctx, r, prof)
	p.core.event(ctx, r, "session", fmt.Sprintf("%s %s in %s (attach: ace attach %d)", verb, prof.Name, spec.Name, r.Issue))
	return nil
}

// sessionCommand is a tmux session's spec for an agent, whether it is boxed and the names of its secrets.
type sessionCommand struct {
	spec    tmuxops.SessionSpec
	boxed   bool
	secrets []string
}

// sessionSpecOf is sessionSpec for argv: the agent's CLI, or a program of ace's that hosts it (host), in the
// run's box where it has one (boxed).
func (p *panes) sessionSpecOf(ctx context.Context, r *store.Run, prof agents.Profile, name string, argv []string, host *hosted) (sessionCommand, error) {
	cmd, err := p.agent.commandOf(ctx, r, prof, p.agent.vars(r, prof), argv, true, host)
	if err != nil {
		return sessionCommand{}, err
	}
	tc := p.cfg.Tmux
	spec := tmuxops.SessionSpec{
		Name: name, Dir: r.Workdir, Argv: cmd.argv, Env: cmd.env, Secrets: cmd.secrets,
		Width: tc.Width, Height: tc.Height, HistoryLimit: tc.HistoryLimit,
		LogPath:    transcript.TerminalLog(p.root, name),
		Launcher:   p.launcher,
		RuntimeDir: filepath.Join(p.root, "run"),
	}
	if cmd.boxed {
		// The box's launcher makes the env file the pane's whole environment (the tmux server's is ace's own):
		// plain variables and secrets travel in it alike.
		spec.Launcher, spec.Env, spec.Secrets = []string{p.self, sandbox.LaunchArg}, nil, maps.Clone(cmd.env)
		maps.Copy(spec.Secrets, cmd.secrets)
	}
	return sessionCommand{spec: spec, boxed: cmd.boxed, secrets: slices.Sorted(maps.Keys(cmd.secrets))}, nil
}

// pane finds the session's pane in one list of every pane. The list is shared by all runs ticked within
// panesTTL, so a poll pass over many runs costs one `tmux list-panes`, not one per run.
func (p *panes) pane(ctx context.Context, name string) (tmuxops.Pane, bool, error) {
	p.mu.Lock()
	list, at, gen := p.list, p.listAt, p.gen
	p.mu.Unlock()
	if at.IsZero() || time.Since(at) > panesTTL {
		var err error
		if list, err = p.tmux.Panes(ctx); err != nil {
			return tmuxops.Pane{}, false, fmt.Errorf("list tmux panes: %w", err)
		}
		p.mu.Lock()
		if p.gen == gen {
			// Only a listing that began after the last start or kill is shared: an older one may miss a session
			// another run has just started, which would read as an agent gone.
			p.list, p.listAt = list, time.Now()
		}
		p.mu.Unlock()
	}
	for _, pn := range list {
		if pn.Session == name {
			return pn, true, nil
		}
	}
	return tmuxops.Pane{}, false, nil
}

// panesTTL bounds how stale a shared pane list may be.
const panesTTL = 250 * time.Millisecond

// invalidate drops the shared pane list after ace itself started, restarted or killed a session.
func (p *panes) invalidate() {
	p.mu.Lock()
	p.listAt = time.Time{}
	p.gen++
	p.mu.Unlock()
}

// live returns ErrNoSession unless run r's session is there.
func (p *panes) live(ctx context.Context, r *store.Run) error {
	if r.Session == "" {
		return fmt.Errorf("%s#%d: %w", r.Repo, r.Issue, ErrNoSession)
	}
	ok, err := p.tmux.HasSession(ctx, r.Session)
	if err != nil {
		return fmt.Errorf("look for session %s: %w", r.Session, err)
	}
	if !ok {
		return fmt.Errorf("%s#%d (session %s is gone): %w", r.Repo, r.Issue, r.Session, ErrNoSession)
	}
	return nil
}

// screen is run r's pane with historyLines of scrollback.
func (p *panes) screen(ctx context.Context, r *store.Run, historyLines int) (string, error) {
	if err := p.live(ctx, r); err != nil {
		return "", err
	}
	return p.tmux.Capture(ctx, r.Session, historyLines)
}

// stop kills run r's session and everything it started, if it is still there.
func (p *panes) stop(ctx context.Context, r *store.Run) error {
	if r.Session == "" {
		return nil
	}
	alive, err := p.tmux.HasSession(ctx, r.Session)
	if err != nil {
		return fmt.Errorf("look for session %s: %w", r.Session, err)
	}
	if alive {
		err := p.tmux.Kill(ctx, r.Session)
		p.invalidate()
		if err != nil {
			return fmt.Errorf("stop session %s: %w", r.Session, err)
		}
		p.core.event(ctx, r, "session", "closed "+r.Session)
	}
	return nil
}

// sessionGone says what ended the tmux session of run r's agent, which is not there: the host restarted, its
// tmux server went (the one it started on, by PID), or only the session was ended.
func (p *panes) sessionGone(ctx context.Context, r *store.Run) string {
	if rebooted(r) {
		return "the host restarted: its boot id changed"
	}
	was := r.State.TmuxServer
	now, err := p.tmux.ServerPID(ctx)
	switch {
	case err != nil && was > 0:
		return fmt.Sprintf("its tmux server (pid %d) is gone: tmux kill-server, a crash, a host restart or a server ace recovered", was)
	case err != nil:
		return "no tmux server runs: tmux kill-server, a crash, a host restart or a server ace recovered"
	case was > 0 && now != was:
		return fmt.Sprintf("its tmux server (pid %d) is gone, pid %d serves now: tmux kill-server, a crash, a host "+
			"restart or a server ace recovered", was, now)
	}
	return "its tmux session was ended from outside (tmux kill-session)"
}
