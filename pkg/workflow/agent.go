package workflow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/runbox"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workspace"
)

// runAgent is what ace knows of a run's agent: its profile, its environment, its CLI's version, where its CLI
// keeps its sessions (sessionDirs).
type runAgent struct {
	core     agentCore
	profiles func(name string) (agents.Profile, error) // built-in merged with config
	secrets  Secrets
	tracker  interface{ Secret() string } // for an agent's GitHub MCP server
	box      *runbox.Boxes                // the agent's command goes through its run's box (box.go)
	cfg      *config.Config
	root     string // workspace.root: the agents' homes, ace's bin
	log      *slog.Logger
	versions agents.VersionCache // the agent CLIs' versions (recordCLIVersion)
}

// agentCore is what the run's agent needs of the engine's core: the run's events, the files it cannot go on
// without, and its working copy.
type agentCore interface {
	event(ctx context.Context, r *store.Run, kind EventKind, msg string)
	needFile(ctx context.Context, r *store.Run, what string, err error) error
	openWork(ctx context.Context, r *store.Run) (*workspace.Workspace, error)
}

// recordCLIVersion notes on the run which version of its agent's CLI it started, against the releases ace was
// tested with: ace show, ace ls --json and the status comment carry it, and one outside the range is an event
// (its screens may have moved: `ace agents check` tells). A probe that fails or hangs costs the run nothing.
func (ag *runAgent) recordCLIVersion(ctx context.Context, r *store.Run, prof agents.Profile) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	in, err := ag.versions.Of(ctx, prof)
	if err != nil || in.Version == "" {
		if err != nil {
			ag.log.DebugContext(ctx, "agent CLI version unknown", "agent", prof.Name, "err", err)
		}
		return
	}
	v := &store.CLIVersion{Version: in.Version}
	if in.Tested.Oldest != "" {
		v.Tested, v.Place = in.Tested.String(), in.Tested.Place(in.Version)
	}
	if old := r.State.AgentCLI; old != nil && *old == *v {
		return
	}
	r.State.AgentCLI = v
	if v.Place != 0 {
		ag.core.event(ctx, r, "agent-version", fmt.Sprintf("%s %s: outside the tested range; run `ace agents check %s` to see whether ace still drives it",
			prof.Name, v, prof.Name))
	}
}

// launchEnv is what an agent process gets besides its command: plain variables (ACE_*, the profile's env, its
// home's, the MCP token variable's name) and, apart, its secrets, which only ever travel through the launcher's
// env file; logins are the user's login files its home links to, which a box must show it.
type launchEnv struct {
	env, secrets map[string]string
	logins       []string
}

// agentEnv is the agent's environment, whichever runner starts it. boxHome is the home of a boxed run's agent
// ("" unboxed): prepared from the home the agent would have outside the box.
func (ag *runAgent) agentEnv(ctx context.Context, r *store.Run, prof agents.Profile, vars agents.Vars, boxHome string) (launchEnv, error) {
	env := map[string]string{"ACE_ISSUE": fmt.Sprint(r.Issue), "ACE_REPO": r.Repo, "ACE_TASK_FILE": vars.TaskFile}
	for k, v := range prof.Env {
		env[k] = v
	}
	var mcp agents.MCPConfig
	if prof.GitHubMCP != "" {
		mcp = agents.MCPConfig{GitHubURL: prof.GitHubMCP, GitHubTokenEnv: mcpTokenEnv}
		env["GITHUB_MCP_TOKEN_ENV"] = mcpTokenEnv // the variable's name, for scripts/codex-gh
		if err := ag.writeProjectMCP(ctx, r, prof, mcp); err != nil {
			return launchEnv{}, err
		}
	}
	auth, err := prof.SignIn(ctx, ag.secrets, agents.CurrentUser())
	if err != nil {
		return launchEnv{}, Terminal(err)
	}
	runEnv, err := prof.RunEnv(ag.root, r.Workdir)
	if err != nil {
		return launchEnv{}, fmt.Errorf("prepare %s: %w", prof.Name, err)
	}
	for k, v := range runEnv {
		env[k] = v
	}
	var homeEnv map[string]string
	switch {
	case boxHome != "":
		from := agents.AgentHome(prof, ag.root, agents.CurrentUser())
		if homeEnv, err = agents.PrepareRunHome(prof, boxHome, from, r.Workdir, mcp, auth); err != nil {
			return launchEnv{}, ag.core.needFile(ctx, r, "prepare the run's home for "+prof.Name, err)
		}
	case prof.Home == "isolated":
		if homeEnv, err = agents.PrepareHome(prof, ag.root, r.Workdir, mcp, auth); err != nil {
			return launchEnv{}, ag.core.needFile(ctx, r, "prepare isolated home for "+prof.Name, err)
		}
	}
	for k, v := range homeEnv {
		env[k] = v
	}
	secrets := auth.Secrets
	if prof.GitHubMCP != "" && secrets[mcpTokenEnv] == "" {
		tok := ag.tracker.Secret()
		if tok == "" {
			return launchEnv{}, Terminalf("agents.%s.github_mcp needs a GitHub token: the tracker (%s) has none",
				prof.Name, ag.cfg.Tracker.Kind)
		}
		secrets[mcpTokenEnv] = tok
	}
	le := launchEnv{env: env, secrets: secrets}
	for _, f := range auth.LoginFiles {
		le.logins = append(le.logins, f)
	}
	slices.Sort(le.logins)
	return le, nil
}

// writeProjectMCP writes the MCP config an agent reads from the working copy (claude's .mcp.json) — unless
// the repository tracks that file: it is the project's, and an edit of it would end up in the pull request.
func (ag *runAgent) writeProjectMCP(ctx context.Context, r *store.Run, prof agents.Profile, mcp agents.MCPConfig) error {
	if !prof.ReadsProjectMCP() {
		return nil
	}
	ws, err := ag.core.openWork(ctx, r)
	if err != nil {
		return fmt.Errorf("open working copy: %w", err)
	}
	tracked, err := ws.Tracked(ctx, ".mcp.json")
	if err != nil {
		return fmt.Errorf("look for a tracked .mcp.json: %w", err)
	}
	if tracked {
		ag.core.event(ctx, r, "mcp", "the repository tracks .mcp.json: left as it is, without ace's GitHub MCP server")
		return nil
	}
	if err := agents.WriteProjectMCP(prof, r.Workdir, mcp); err != nil {
		return ag.core.needFile(ctx, r, "write MCP config for "+prof.Name, err)
	}
	return nil
}

// mcpTokenEnv is the variable that carries the tracker's token to an agent's GitHub MCP server.
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

func (ag *runAgent) profile(r *store.Run) (agents.Profile, error) {
	prof, err := ag.profiles(r.Agent)
	if err != nil {
		return agents.Profile{}, Terminal(fmt.Errorf("agent %q: %w", r.Agent, err))
	}
	if m := r.State.Model; m != "" {
		prof.Model = m
	}
	return prof, nil
}

// vars fill the agent's command templates for run r.
func (ag *runAgent) vars(r *store.Run, prof agents.Profile) agents.Vars {
	return agents.Vars{
		Model: prof.Model, TaskFile: filepath.Join(r.Workdir, "ACE_TASK.md"), Workdir: r.Workdir,
		Repo: r.Repo, Issue: r.Issue, AceBin: filepath.Join(ag.root, "bin"),
	}
}

// sessionDirs are the directories of the CLI's own session files for run r, where they are the run's alone: the
// CLI's home for the run (boxed) or ace's isolated home for the agent. In the user's own home they are shared
// with every other session of the CLI, and tell nothing of this run.
func (ag *runAgent) sessionDirs(r *store.Run, prof agents.Profile) []string {
	a := prof.Adapter()
	if a == nil || a.ConfigDir == nil {
		return nil
	}
	home := ""
	switch {
	case r.State.Box != nil && r.State.Box.Proxy != "" && r.State.Box.Home != "":
		home = r.State.Box.Home
	case prof.Home == "isolated":
		home = agents.AgentHome(prof, ag.root, agents.CurrentUser()).Home
	}
	if home == "" {
		return nil
	}
	if dir := a.ConfigDir(home, nil); dir != "" {
		return []string{dir}
	}
	return nil
}
