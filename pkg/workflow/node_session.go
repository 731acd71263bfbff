package workflow

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tmuxops"
)

// startSession opens the agent (its runner's Start), or re-attaches to the one a previous ace process left.
func (e *Engine) startSession(ctx context.Context, r *store.Run) (Result, error) {
	return e.runner(r).Start(ctx, r)
}

// deliver gives the agent its task (its runner's Deliver).
func (e *Engine) deliver(ctx context.Context, r *store.Run) (Result, error) {
	return e.runner(r).Deliver(ctx, r)
}

// sessionName is the run's tmux session: the one it has, else ace-<repo>-<issue> — unless an unfinished run of
// another repository of the same name (a fork, another owner's namesake) holds that one: then the name carries
// a hash of owner/repo, so that neither run ever re-attaches to the other's agent.
func (e *Engine) sessionName(ctx context.Context, r *store.Run) (string, error) {
	if r.Session != "" {
		return r.Session, nil
	}
	name := tmuxops.SessionName(r.Repo, r.Issue)
	runs, err := e.o.Store.ListRuns(ctx, store.Filter{Statuses: []store.Status{store.StatusActive, store.StatusWaitingInput, store.StatusPausedLimit}})
	if err != nil {
		return "", fmt.Errorf("list active runs: %w", err)
	}
	for _, o := range runs {
		if o.Session == name && o.Repo != r.Repo {
			return tmuxops.QualifiedSessionName(r.Repo, r.Issue), nil
		}
	}
	return name, nil
}

// launch starts (or, with respawn, restarts in place) the agent in session name with its secrets injected; with
// cont, in the conversation it last had in the working copy (agents.Profile.ContinueCommand).
func (e *Engine) launch(ctx context.Context, r *store.Run, name string, respawn, cont bool) error {
	prof, err := e.profile(r)
	if err != nil {
		return err
	}
	spec, err := e.sessionSpec(ctx, r, prof, name, cont)
	if err != nil {
		return err
	}
	if respawn {
		err = e.o.Sessions.Respawn(ctx, spec)
	} else {
		err = e.o.Sessions.NewSession(ctx, spec)
	}
	e.invalidatePanes()
	if err != nil {
		return fmt.Errorf("start %s in tmux session %s: %w", prof.Name, name, err)
	}
	r.Session = name
	r.State.PastedAt, r.State.PastesLost = time.Time{}, 0 // a new agent process: nothing pasted into it yet
	e.recordCLIVersion(ctx, r, prof)
	verb := "started"
	switch {
	case cont:
		verb = "resumed the conversation of"
	case respawn:
		verb = "restarted"
	}
	e.event(ctx, r, "session", fmt.Sprintf("%s %s in %s (attach: ace attach %d)", verb, prof.Name, name, r.Issue))
	return nil
}

// sessionSpec builds everything tmux needs to run the agent: argv (no shell), plain env, secrets, home.
func (e *Engine) sessionSpec(ctx context.Context, r *store.Run, prof agents.Profile, name string, cont bool) (tmuxops.SessionSpec, error) {
	vars := agents.Vars{
		Model: prof.Model, TaskFile: filepath.Join(r.Workdir, "ACE_TASK.md"), Workdir: r.Workdir,
		Repo: r.Repo, Issue: r.Issue, AceBin: filepath.Join(e.o.Root, "bin"),
	}
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
	env, secrets, err := e.agentEnv(ctx, r, prof, vars)
	if err != nil {
		return tmuxops.SessionSpec{}, err
	}
	t := e.cfg.Tmux
	return tmuxops.SessionSpec{
		Name: name, Dir: r.Workdir, Argv: argv, Env: env, Secrets: secrets,
		Width: t.Width, Height: t.Height, HistoryLimit: t.HistoryLimit,
		LogPath:    filepath.Join(e.o.Root, "logs", name+".log"),
		Launcher:   e.o.Launcher,
		RuntimeDir: filepath.Join(e.o.Root, "run"),
	}, nil
}

// agentEnv is the agent's environment, whichever runner starts it: plain variables (ACE_*, the profile's env,
// an isolated home, the MCP token variable's name) and, apart, its secrets, which only ever travel through the
// launcher's env file.
func (e *Engine) agentEnv(ctx context.Context, r *store.Run, prof agents.Profile, vars agents.Vars) (env, secrets map[string]string, err error) {
	env = map[string]string{"ACE_ISSUE": fmt.Sprint(r.Issue), "ACE_REPO": r.Repo, "ACE_TASK_FILE": vars.TaskFile}
	for k, v := range prof.Env {
		env[k] = v
	}
	var mcp agents.MCPConfig
	if prof.GitHubMCP != "" {
		mcp = agents.MCPConfig{GitHubURL: prof.GitHubMCP, GitHubTokenEnv: mcpTokenEnv}
		env["GITHUB_MCP_TOKEN_ENV"] = mcpTokenEnv // the variable's name, for scripts/codex-gh
		if err := e.writeProjectMCP(ctx, r, prof, mcp); err != nil {
			return nil, nil, err
		}
	}
	auth, err := prof.SignIn(ctx, e.o.Secrets, agents.CurrentUser())
	if err != nil {
		return nil, nil, Terminal(err)
	}
	runEnv, err := prof.RunEnv(e.o.Root, r.Workdir)
	if err != nil {
		return nil, nil, fmt.Errorf("prepare %s: %w", prof.Name, err)
	}
	for k, v := range runEnv {
		env[k] = v
	}
	if prof.Home == "isolated" {
		homeEnv, err := agents.PrepareHome(prof, e.o.Root, r.Workdir, mcp, auth)
		if err != nil {
			return nil, nil, fmt.Errorf("prepare isolated home for %s: %w", prof.Name, err)
		}
		for k, v := range homeEnv {
			env[k] = v
		}
	}
	secrets = auth.Secrets
	if prof.GitHubMCP != "" && secrets[mcpTokenEnv] == "" {
		tok, err := e.o.Secrets.GitHubToken(ctx, e.cfg.GitHub.TokenEnv)
		if err != nil {
			return nil, nil, Terminal(fmt.Errorf("agents.%s.github_mcp needs a GitHub token: %w", prof.Name, err))
		}
		secrets[mcpTokenEnv] = tok
	}
	return env, secrets, nil
}

// writeProjectMCP writes the MCP config an agent reads from the working copy (claude's .mcp.json) — unless
// the repository tracks that file: it is the project's, and an edit of it would end up in the pull request.
func (e *Engine) writeProjectMCP(ctx context.Context, r *store.Run, prof agents.Profile, mcp agents.MCPConfig) error {
	if !prof.ReadsProjectMCP() {
		return nil
	}
	ws, err := e.o.Workspaces.Open(ctx, r.Repo, r.Issue)
	if err != nil {
		return fmt.Errorf("open working copy: %w", err)
	}
	tracked, err := ws.Tracked(ctx, ".mcp.json")
	if err != nil {
		return fmt.Errorf("look for a tracked .mcp.json: %w", err)
	}
	if tracked {
		e.event(ctx, r, "mcp", "the repository tracks .mcp.json: left as it is, without ace's GitHub MCP server")
		return nil
	}
	if err := agents.WriteProjectMCP(prof, r.Workdir, mcp); err != nil {
		return fmt.Errorf("write MCP config for %s: %w", prof.Name, err)
	}
	return nil
}

// mcpTokenEnv is the variable that carries the GitHub token to an agent's GitHub MCP server.
const mcpTokenEnv = "GITHUB_TOKEN"

// checkExecutable fails early, with the install command, when the agent's program is not there: a session that
// dies at once with "command not found" would otherwise only show up as a crash.
func checkExecutable(exe, workdir string, prof agents.Profile) error {
	if !found(exe, workdir) {
		return missing(exe, prof)
	}
	if cli := prof.WrappedCLI(exe); cli != "" && !found(cli, workdir) {
		return missing(cli, prof) // ace's wrapper (codex-gh) is there, but not the CLI it runs
	}
	return nil
}

func found(exe, workdir string) bool {
	if strings.Contains(exe, "/") {
		if !filepath.IsAbs(exe) {
			exe = filepath.Join(workdir, exe)
		}
		_, err := os.Stat(exe)
		return err == nil
	}
	_, err := exec.LookPath(exe)
	return err == nil
}

func missing(exe string, prof agents.Profile) error {
	msg := fmt.Sprintf("agent %s: %s not found", prof.Name, exe)
	if hint := agents.InstallHint(filepath.Base(exe)); hint != "" {
		msg += "; install it with: " + hint
	} else if prof.InstallHint != "" {
		msg += "; install it with: " + prof.InstallHint
	}
	return errors.New(msg)
}

func (e *Engine) profile(r *store.Run) (agents.Profile, error) {
	prof, err := e.o.Profile(r.Agent)
	if err != nil {
		return agents.Profile{}, Terminal(fmt.Errorf("agent %q: %w", r.Agent, err))
	}
	if m := r.State.Model; m != "" {
		prof.Model = m
	}
	return prof, nil
}

// pane finds the session's pane in one list of every pane. The list is shared by all runs ticked within
// panesTTL, so a poll pass over many runs costs one `tmux list-panes`, not one per run.
func (e *Engine) pane(ctx context.Context, name string) (tmuxops.Pane, bool, error) {
	e.mu.Lock()
	panes, at, gen := e.panes, e.panesAt, e.panesGen
	e.mu.Unlock()
	if at.IsZero() || time.Since(at) > panesTTL {
		var err error
		if panes, err = e.o.Sessions.Panes(ctx); err != nil {
			return tmuxops.Pane{}, false, fmt.Errorf("list tmux panes: %w", err)
		}
		e.mu.Lock()
		if e.panesGen == gen {
			// Only a listing that began after the last start or kill is shared: an older one may miss a session
			// another run has just started, which would read as an agent gone.
			e.panes, e.panesAt = panes, time.Now()
		}
		e.mu.Unlock()
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
func (e *Engine) invalidatePanes() {
	e.mu.Lock()
	e.panesAt = time.Time{}
	e.panesGen++
	e.mu.Unlock()
}
