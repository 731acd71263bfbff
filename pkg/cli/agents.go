package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/aceworks/ace/pkg/agentcheck"
	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/service"
)

func newCmdAgents(app *App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agents",
		Short: "The agent CLIs ace drives: check the installed ones, install other releases",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newCmdAgentsCheck(app), newCmdAgentsInstall(app))
	return cmd
}

// agentsCheckOptions are the flags of ace agents check.
type agentsCheckOptions struct {
	dir     string
	timeout time.Duration
	startup time.Duration
	newest  bool
}

func newCmdAgentsCheck(app *App) *cobra.Command {
	var o agentsCheckOptions
	cmd := &cobra.Command{
		Use:   "check [NAME...]",
		Short: "Verify installed agent CLIs offline: first-run screens, prompt, approval, question, commit, usage, limit",
		Long: `Check drives each agent CLI installed here (or the ones named) through ace the way a run does, offline:
ace's own scripted model server on 127.0.0.1, a throwaway repository and issue, a fresh home, and — where the
kernel allows it — a loopback-only network namespace, so nothing leaves this machine and your own
credentials are never used. Each CLI is taken through its start and first-run screens (trust, API key),
prompt delivery, a shell command it asks permission for, a question answered in free text on the issue, its
own commit and a pull request, the usage ace reads from it, and a usage-limit reply. Your settings of the agent
in ace.toml (command, model, home, markers) are used. First, and online, it checks your real setup: whether
each agent reaches the endpoints your configuration names (its model's gateway or API, the MCP servers its
settings name), from a box like its runs' — a connection to each, no request; one the box keeps out fails and
names the line of ace.toml to add.

It prints what held and what did not, saves the screen of each failed step, exits non-zero on a failure, and
keeps the last result per CLI and version for ace doctor and ace serve. Run it after upgrading a CLI.

With --newest it checks the newest release of each CLI on the npm registry instead of the installed one, before
you upgrade: the release is installed into a prefix under ace's root (never your global install), checked the
same way, and the check says "safe to upgrade" or shows the screens that failed. A release downloaded once is
checked again with no network but the registry's answer; a registry that does not answer fails the check.`,
		RunE: func(cmd *cobra.Command, args []string) error { return agentsCheckRun(cmd, app, args, o) },
	}
	cmd.Flags().StringVar(&o.dir, "dir", "", "keep the check's files (logs, screens, working copies) in this `directory`")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 2*time.Minute, "give up on a phase after this long")
	cmd.Flags().DurationVar(&o.startup, "startup-timeout", 45*time.Second, "how long a CLI may take to show its prompt")
	cmd.Flags().BoolVar(&o.newest, "newest", false, "check the newest release on the npm registry (installed under ace's root), not the installed one")
	return cmd
}

func agentsCheckRun(cmd *cobra.Command, app *App, names []string, o agentsCheckOptions) error {
	if o.newest {
		return agentsCheckNewest(cmd, app, names, o)
	}
	results, dir, err := agentcheck.Run(cmd.Context(), agentcheck.Options{
		Agents: names, Config: app.Config, ConfigPath: app.ConfigPath, Executable: executable(), Dir: o.dir,
		StartupTimeout: o.startup, Timeout: o.timeout, Out: app.Stdout,
	})
	if err != nil {
		return err
	}
	return keepResults(app, results, dir, o)
}

// keepResults prints the check's results, keeps each for ace doctor and ace serve, and fails when one did.
func keepResults(app *App, results []agentcheck.Result, dir string, o agentsCheckOptions) error {
	agentcheck.Print(app.Stdout, results)
	var failed []string
	for _, r := range results {
		if !r.OK() {
			failed = append(failed, r.Agent)
		}
		if r.Version != "" {
			if err := agentcheck.Save(app.Config.Workspace.Root, r); err != nil {
				app.Logger.Warn("keep the check's result", "agent", r.Agent, "err", err)
			}
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("the check failed for %s (its files: %s)", strings.Join(failed, ", "), dir)
	}
	if o.dir == "" {
		_ = os.RemoveAll(dir)
	}
	fmt.Fprintln(app.Stdout, "every check held")
	return nil
}

// agentsCheckNewest is the canary: each named agent's (every checkable built-in agent's when none is named) newest
// release, installed under ace's root, checked with its programs first on the check's PATH.
func agentsCheckNewest(cmd *cobra.Command, app *App, names []string, o agentsCheckOptions) error {
	explicit := len(names) > 0
	if !explicit {
		names = agents.BuiltinNames()
	}
	var profiles []agents.Profile
	for _, name := range names {
		p, err := service.Profile(app.Config, name)
		if err != nil {
			return err
		}
		if !explicit && agentcheck.Checkable(p) != nil {
			continue // ace's own fake agent: nothing to download
		}
		profiles = append(profiles, p)
	}
	reg := agentcheck.Registry{Dir: agentcheck.NewestDir(app.Config.Workspace.Root)}
	canaries, err := reg.Canaries(cmd.Context(), profiles)
	if err != nil {
		return fmt.Errorf("ace agents check --newest: %w", err)
	}
	var unsafe []string
	for _, c := range canaries {
		how := "downloaded into " + filepath.Dir(c.Bin)
		if !c.Downloaded {
			how = "already downloaded in " + filepath.Dir(c.Bin)
		}
		fmt.Fprintf(app.Stdout, "the newest %s on the npm registry is %s (%s)\n", c.Package, c.Version, how)
		results, dir, err := agentcheck.Run(cmd.Context(), agentcheck.Options{
			Agents: []string{c.Agent}, Config: app.Config, ConfigPath: app.ConfigPath, Executable: executable(),
			Dir: o.dir, StartupTimeout: o.startup, Timeout: o.timeout, Out: app.Stdout,
			Env: []string{"PATH=" + c.Bin + string(os.PathListSeparator) + os.Getenv("PATH")},
		})
		if err != nil {
			return err
		}
		kerr := keepResults(app, results, dir, o)
		for _, r := range results {
			fmt.Fprintln(app.Stdout, c.Verdict(r))
		}
		if kerr != nil {
			fmt.Fprintln(app.Stdout, kerr)
			unsafe = append(unsafe, c.Agent+" "+c.Version)
		}
	}
	if len(unsafe) > 0 {
		return fmt.Errorf("not safe to upgrade: %s", strings.Join(unsafe, ", "))
	}
	return nil
}
