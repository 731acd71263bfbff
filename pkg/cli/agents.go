package cli

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/aceworks/ace/pkg/agentcheck"
)

func newCmdAgents(app *App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agents",
		Short: "The agent CLIs ace drives: check the installed ones",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newCmdAgentsCheck(app))
	return cmd
}

// agentsCheckOptions are the flags of ace agents check.
type agentsCheckOptions struct {
	dir     string
	timeout time.Duration
	startup time.Duration
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
keeps the last result per CLI and version for ace doctor and ace serve. Run it after upgrading a CLI.`,
		RunE: func(cmd *cobra.Command, args []string) error { return agentsCheckRun(cmd, app, args, o) },
	}
	cmd.Flags().StringVar(&o.dir, "dir", "", "keep the check's files (logs, screens, working copies) in this `directory`")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 2*time.Minute, "give up on a phase after this long")
	cmd.Flags().DurationVar(&o.startup, "startup-timeout", 45*time.Second, "how long a CLI may take to show its prompt")
	return cmd
}

func agentsCheckRun(cmd *cobra.Command, app *App, names []string, o agentsCheckOptions) error {
	results, dir, err := agentcheck.Run(cmd.Context(), agentcheck.Options{
		Agents: names, Config: app.Config, ConfigPath: app.ConfigPath, Executable: executable(), Dir: o.dir,
		StartupTimeout: o.startup, Timeout: o.timeout, Out: app.Stdout,
	})
	if err != nil {
		return err
	}
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
