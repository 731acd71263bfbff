package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/eval"
	"github.com/aceworks/ace/pkg/service"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
	"github.com/aceworks/ace/pkg/workspace"
)

type evalRunOptions struct {
	Repo   string
	Tasks  string
	Agents string
	Runs   int
	Jobs   int
	Dir    string
	Keep   bool
	JSON   bool
	// Releases are directories holding CLI releases, besides [eval] releases; NoInstall refuses to install one.
	Releases  []string
	NoInstall bool
}

func newCmdEvalRun(app *App) *cobra.Command {
	var o evalRunOptions
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run agents on the task set through ace's own loop and score each run by the task's hidden check",
		Long: `Run gives each task of the set (ace eval build's) to each agent, --runs times, each through ace's own
graph, runner, prompt, box and protocol, as an issue would be — but no issue is claimed, nothing is posted or
pushed anywhere and no pull request is opened: the run's remote is a repository holding the task's past alone
(no object, ref or file from after its base commit), and what the run pushed there is its work. A question to a
human gets the answer "decide yourself". Once the run has ended its work is scored by the task's hidden check, in
a box: the test patch applied on top of it, the check run.

Each result (solved, tokens, cost, wall time, turns, nudges, the CLI's release, the model) is written as soon as
it is scored, to --dir: run it again after a crash, or with more agents or runs, and it does only what is left.
An agent named NAME@VERSION (claude@2.1.331) runs that release of its CLI, the built-in agent's commands started
from it: found in a directory of --releases or [eval] releases (an install prefix, such as the repository's
tools/agent-clis/newest), else among the releases ace keeps (ace agents install), else installed there now
(unless --no-install). Two releases of one CLI make a canary: ace eval report --compare shows what changed.

With the store on PostgreSQL ([store] url, a fleet), the hosts running the eval of one repository in directories
of the same name share it: each item is run by one host, its result kept in the store; each host ends once every
item has a result, taking over the items of a host that died once its lease (host.dead_after) ran out.

ace eval report sums the results up.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runEvalRun(cmd.Context(), app, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.Repo, "repo", "", "repository `owner/name` (default: the only one configured)")
	f.StringVar(&o.Tasks, "tasks", "", "the task set `file` (default: <workspace.root>/eval/<owner>/<name>/tasks.jsonl)")
	f.StringVar(&o.Agents, "agents", "", "the agents, comma-separated, each NAME or NAME@VERSION (default: agent.default)")
	f.IntVar(&o.Runs, "runs", 1, "runs of each task by each agent")
	f.IntVar(&o.Jobs, "jobs", 0, "runs at once (default: eval.jobs, else poll.max_concurrent)")
	f.StringVar(&o.Dir, "dir", "", "the eval's `directory`: its plan, results and runs (default: beside the task set, run/)")
	f.BoolVar(&o.Keep, "keep", false, "keep each run's working copy once scored")
	f.BoolVar(&o.JSON, "json", false, "print the results as JSON")
	f.StringSliceVar(&o.Releases, "releases", nil, "`directories` holding CLI releases (install prefixes), looked in before eval.releases")
	f.BoolVar(&o.NoInstall, "no-install", false, "refuse a release named in --agents that is not installed instead of installing it")
	return cmd
}

func runEvalRun(ctx context.Context, app *App, o evalRunOptions) error {
	cfg := app.Config
	if o.Runs <= 0 || o.Jobs < 0 {
		return flagErrorf("--runs must be positive and --jobs not negative")
	}
	agentList := o.Agents
	if agentList == "" {
		if cfg.Agent.Default == config.AgentAuto {
			return flagErrorf("--agents: agent.default is \"auto\", which an eval measures for: name the agents to run")
		}
		agentList = cfg.Agent.Default
	}
	agents, err := eval.ParseAgents(agentList)
	if err != nil {
		return flagErrorf("--agents: %v", err)
	}
	repo, err := service.ConfiguredRepo(cfg, o.Repo)
	if err != nil {
		return &FlagError{err}
	}
	tasksPath, dir, err := evalPaths(cfg, repo, o.Tasks, o.Dir)
	if err != nil {
		return err
	}
	tasks, err := eval.ReadTasks(tasksPath)
	if err != nil {
		return fmt.Errorf("the task set: %w", err)
	}
	set := &eval.RunSet{Tasks: map[string]*eval.Task{}}
	for i := range tasks {
		if tasks[i].Repo != repo {
			return fmt.Errorf("%s: task %s is of %s, not %s", tasksPath, tasks[i].InstanceID, tasks[i].Repo, repo)
		}
		set.Tasks[tasks[i].InstanceID] = &tasks[i]
	}
	if len(tasks) == 0 {
		return fmt.Errorf("%s holds no task", tasksPath)
	}
	if err := eval.CheckDir(dir); err != nil {
		return &FlagError{fmt.Errorf("--dir: %w", err)}
	}
	// Held until ace eval run ends: one run at a time in a directory, and ace clean leaves a running one alone.
	unlock, err := eval.Lock(dir)
	if err != nil {
		return err
	}
	defer unlock()
	// ace clean finds it there, wherever --dir put it.
	if err := eval.Register(cfg.Workspace.Root, dir); err != nil {
		return err
	}
	book, closeBook, err := evalBook(ctx, cfg, repo, dir, app)
	if err != nil {
		return err
	}
	defer closeBook()
	var runBook eval.Book // the directory's own, unless shared
	if book != nil {
		set.Plan, runBook = eval.NewPlan(), book
	} else if set.Plan, err = eval.LoadPlan(dir); err != nil {
		return err
	}
	ecfg := evalRunConfig(cfg, dir)
	if err := evalReleases(ctx, app, ecfg, agents, o); err != nil {
		return err
	}
	mirror, branch, err := evalMirror(ctx, app, repo, tasks)
	if err != nil {
		return err
	}
	rws, err := eval.NewRunWorkspaces(dir, mirror, branch, set.Task, workspace.Options{AuthorName: cfg.Git.AuthorName,
		AuthorEmail: cfg.Git.AuthorEmail, Logger: app.Logger, GitTimeout: cfg.Workspace.GitTimeout.Duration})
	if err != nil {
		return err
	}
	caches, err := rws.DepCacheEnv(repo)
	if err != nil {
		return err
	}
	checker, unboxed, err := eval.CheckerFor(ctx, cfg, repo, "", caches, executable())
	if err != nil {
		return err
	}
	svc, err := service.Open(ctx, service.Options{Config: ecfg, Secrets: app.Secrets, Logger: app.Logger, Executable: executable(),
		Tracker: eval.NewRecorder(repo, branch, set.Task), Workspaces: rws, Watching: true})
	if err != nil {
		return err
	}
	defer svc.Close()
	for _, a := range agents {
		prof, err := svc.Profile(a.String())
		if err != nil {
			return flagErrorf("--agents: %s: %v", a, err)
		}
		if a.Version == "" {
			continue
		}
		// The release's program says its version as a run will: one that says another would give runs that do not
		// count (RunResult.Invalid).
		if in, err := prof.CheckInstalled(ctx); err != nil || in.Version != a.Version {
			return flagErrorf("--agents: %s: its program %s is release %q (%v)", a, prof.Program(), in.Version, err)
		}
	}
	if err := svc.StartQueue(ctx); err != nil {
		return err
	}
	if unboxed != "" {
		fmt.Fprintf(app.Stderr, "warning: the checks run UNBOXED (%s), and so may the agents: an agent outside a box can read "+
			"what came after its task's base wherever this machine keeps it\n", unboxed)
	}
	for _, a := range agents {
		if ecfg.SandboxFor(a.Name, repo).Mode == config.SandboxOff {
			fmt.Fprintf(app.Stderr, "warning: %s runs UNBOXED ([sandbox] mode is off for it): it can read what came after its "+
				"task's base wherever this machine keeps it\n", a)
		}
	}
	jobs := o.Jobs
	for _, n := range []int{cfg.Eval.Jobs, cfg.Poll.MaxConcurrent, 1} {
		if jobs <= 0 {
			jobs = n
		}
	}
	var onResult func(eval.RunResult)
	if !o.JSON {
		onResult = func(r eval.RunResult) { printRunResult(app.Stdout, r) }
		where := "checks boxed"
		if unboxed != "" {
			where = "checks UNBOXED"
		}
		fmt.Fprintf(app.Stdout, "%s: %d tasks × %d agents × %d runs, %d at a time, %s (%s)\n", repo, len(tasks), len(agents), o.Runs,
			jobs, where, dir)
		if book != nil {
			fmt.Fprintf(app.Stdout, "shared with the fleet's hosts as eval %s, this one %s\n", book.Name, book.Host)
		}
		fmt.Fprintln(app.Stdout)
	}
	start := time.Now()
	host := cfg.Host.Name
	if book != nil {
		host = book.Host
	}
	sum, err := eval.Run(ctx, eval.RunOptions{Repo: repo, Dir: dir, Book: runBook, Host: host, Set: set, Agents: agents, Runs: o.Runs, Jobs: jobs,
		Driver: &engineDriver{svc: svc}, Workspaces: rws, Checker: checker, Keep: o.Keep, OnResult: onResult, Logger: app.Logger})
	if sum != nil && !o.JSON {
		where := filepath.Join(dir, "results")
		if book != nil {
			where = "the fleet's store"
		}
		fmt.Fprintf(app.Stdout, "\n%d runs (%d tasks × %d agents × %d), %d scored before, %d now (%d by other hosts), in %s; results in %s\n",
			sum.Items, len(tasks), len(agents), o.Runs, sum.Skipped, len(sum.Results)-sum.Skipped, sum.Elsewhere,
			time.Since(start).Round(time.Second), where)
		if err == nil {
			fmt.Fprintf(app.Stdout, "sum them up: ace eval report --dir %s\n", dir)
		}
	}
	if err != nil {
		if errors.Is(err, context.Canceled) {
			fmt.Fprintln(app.Stdout, "stopped: run ace eval run again to go on where it stopped")
		}
		return err
	}
	if o.JSON {
		enc := json.NewEncoder(app.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(sum.Results)
	}
	return nil
}

// evalPaths are the task set's file and the eval's directory, the flags' or their defaults, absolute.
func evalPaths(cfg *config.Config, repo, tasks, dir string) (string, string, error) {
	if tasks == "" {
		tasks = eval.DefaultTasks(cfg.Workspace.Root, repo)
	}
	if dir == "" {
		dir = eval.DirBeside(tasks)
	}
	t, err := filepath.Abs(tasks)
	if err != nil {
		return "", "", err
	}
	d, err := filepath.Abs(dir)
	return t, d, err
}

// evalMirror fetches ace's mirror of repo (in ace's own root) and returns it with the default branch: every
// task's base must be in it.
func evalMirror(ctx context.Context, app *App, repo string, tasks []eval.Task) (mirror, branch string, err error) {
	cfg := app.Config
	trk, err := service.NewTracker(ctx, cfg, app.Secrets, app.Logger)
	if err != nil {
		return "", "", err
	}
	info, err := trk.Repo(ctx, repo)
	if err != nil {
		return "", "", fmt.Errorf("read repository %s: %w", repo, err)
	}
	ws, err := workspace.New(workspace.Options{Root: cfg.Workspace.Root, Logger: app.Logger, Auth: trk})
	if err != nil {
		return "", "", err
	}
	if mirror, err = ws.SyncMirror(ctx, workspace.Spec{Repo: repo, RemoteURL: info.CloneURL}); err != nil {
		return "", "", err
	}
	for _, t := range tasks {
		if err := eval.HasCommit(ctx, mirror, t.BaseCommit); err != nil {
			return "", "", fmt.Errorf("task %s: %w", t.InstanceID, err)
		}
	}
	return mirror, info.DefaultBranch, nil
}

// evalRunConfig is the configuration of ace eval run's engine: ace.toml's, but for a root of the eval's own (its
// store, runtime files, agents' homes and boxes; the store a SQLite file there, so that eval runs never mix
// with the issues' runs), a tmux socket of the eval directory's own (eval.Socket: two evals at once never share a
// session name), no memory across runs (a run would find another's answer), no
// notifications, no pull request followed, and nothing that reaches GitHub: no tracker, API or MCP server an
// agent could ask for the repository as it is now. Each run is its agent's alone: no fallback hands it to another
// at a usage limit, and no default agent lets the repository's workflow choose another (repoflow changes the
// agent of a run made with the default one).
func evalRunConfig(cfg *config.Config, dir string) *config.Config {
	c := *cfg
	c.Agent.Default, c.Agent.Fallback = "", nil
	c.Agent.Attempts, c.Agent.AttemptsAgents, c.Labels.BestOfPrefix = 1, nil, "" // an item measures one agent: no best-of
	c.Workspace.Root = eval.EngineRoot(dir)
	c.Store.URL = ""
	c.Tmux.Socket = eval.Socket(cfg.Tmux.Socket, dir)
	c.Memory.Enabled = false
	c.Notify = nil
	c.PR.Follow = false
	c.Tracker = config.TrackerConfig{Kind: "local"}
	c.GitHub.APIURL, c.GitHub.TokenEnv = "", nil
	c.Agents = maps.Clone(cfg.Agents)
	for name, a := range c.Agents {
		a.GitHubMCP = ""
		c.Agents[name] = a
	}
	return &c
}

// evalReleases makes an agent of each NAME@VERSION of agents in ecfg (ace eval run's configuration): NAME's
// settings, its commands starting that release's program, found or installed (eval.Releases).
func evalReleases(ctx context.Context, app *App, ecfg *config.Config, agents []eval.AgentSpec, o evalRunOptions) error {
	rs := eval.Releases{Root: app.Config.Workspace.Root, Dirs: slices.Clone(app.Config.Eval.Releases), NoInstall: o.NoInstall}
	for _, d := range o.Releases {
		abs, err := filepath.Abs(d)
		if err != nil {
			return err
		}
		rs.Dirs = append([]string{abs}, rs.Dirs...)
	}
	for _, a := range agents {
		if a.Version == "" {
			continue
		}
		prof, err := service.Profile(app.Config, a.Name)
		if err != nil {
			return flagErrorf("--agents: %s: %v", a, err)
		}
		ad := prof.Adapter()
		if ad == nil || ad.Package == "" {
			return flagErrorf("--agents: %s: %s is no CLI ace installs from npm (claude, codex, gemini): it has no releases to name", a, a.Name)
		}
		rel, err := rs.Find(ctx, a.Name, a.Version, ad.Package, ad.CLI)
		if err != nil {
			return fmt.Errorf("--agents: %s: %w", a, err)
		}
		if !o.JSON {
			fmt.Fprintf(app.Stdout, "%s runs %s\n", a, rel.Program)
		}
		if ecfg.Agents == nil {
			ecfg.Agents = map[string]config.AgentConfig{}
		}
		ac := ecfg.Agents[a.Name]
		ac.Program = rel.Program
		ecfg.Agents[a.String()] = ac
		if _, err := service.Profile(ecfg, a.String()); err != nil {
			return flagErrorf("--agents: %s: %v", a, err)
		}
	}
	return nil
}

// engineDriver drives an eval item's run through the engine of ace eval run's service.
type engineDriver struct{ svc *service.Service }

func (d *engineDriver) Drive(ctx context.Context, repo string, n int, agent string) (eval.RunEnd, error) {
	r, err := d.svc.Engine.Open(ctx, workflow.Request{Repo: repo, Issue: n, Agent: agent})
	if err != nil {
		return eval.RunEnd{}, err
	}
	atBudget := func(r *store.Run) bool { return r.Status == store.StatusWaitingInput && r.State.BudgetAsked }
	if err := d.svc.Engine.Follow(ctx, r, func(r *store.Run) bool { return r.Status.Terminal() || atBudget(r) }); err != nil {
		return eval.RunEnd{}, err
	}
	if atBudget(r) {
		// Its budget is where an eval run ends: the recorder leaves the question to go on unanswered.
		if err := d.svc.Engine.Stop(ctx, r, "stopped at its budget (budget.run)"); err != nil {
			return eval.RunEnd{}, err
		}
		if err := d.svc.Engine.Follow(ctx, r, func(r *store.Run) bool { return r.Status.Terminal() }); err != nil {
			return eval.RunEnd{}, err
		}
	}
	evs, err := d.svc.Store.Events(ctx, r.ID)
	if err != nil {
		return eval.RunEnd{}, err
	}
	kinds := map[string]int{}
	for _, e := range evs {
		kinds[e.Kind]++
	}
	end := eval.RunEnd{RunID: r.ID, Status: string(r.Status), Error: r.Error, Branch: r.Branch, Started: r.CreatedAt,
		Ended: r.UpdatedAt, Nudges: kinds[string(workflow.EventNudge)], Questions: kinds[string(workflow.EventQuestion)],
		Model: r.State.Model}
	// A headless or live run counts its turns; in tmux, each text typed to the agent begins one.
	end.Turns = kinds[string(workflow.EventTurn)]
	if end.Turns == 0 {
		end.Turns = kinds[string(workflow.EventPrompt)] + end.Nudges + kinds[string(workflow.EventAnswer)]
	}
	if r.FinishedAt != nil {
		end.Ended = *r.FinishedAt
	}
	if r.State.Usage != nil {
		end.Usage = *r.State.Usage
	}
	if r.State.AgentCLI != nil {
		end.CLIVersion = r.State.AgentCLI.Version
	}
	if end.Model == "" {
		if p, err := d.svc.Profile(r.Agent); err == nil {
			end.Model = p.Model
		}
	}
	return end, nil
}

// printRunResult is one line per scored run.
func printRunResult(w io.Writer, r eval.RunResult) {
	word := "unsolved"
	if r.Solved {
		word = "solved  "
	}
	line := fmt.Sprintf("%s %s  %s #%d: %s, check %s, %.0fs, $%.4f", word, r.InstanceID, r.Agent, r.Run, r.Status, r.Check,
		r.WallSeconds, r.Usage.CostUSD)
	if r.Invalid != "" {
		line += " — NOT SCORED: " + r.Invalid
	} else if r.Error != "" {
		line += " — " + r.Error
	}
	fmt.Fprintln(w, line)
}
