package cli

import (
	"github.com/spf13/cobra"

	"github.com/aceworks/ace/pkg/demo"
)

func newCmdDemo(app *App) *cobra.Command {
	var o demo.Options
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the whole loop offline: local remote, local issue, a scripted agent in tmux, one CI round to merge",
		Long: `Demo shows ace end to end without GitHub or a real agent: it creates a bare git repository as the
remote, a local-tracker issue asking for a small change, and runs the scripted fake agent in a real tmux
session through the same graph as ace run. Once the pull request opens, the repository's CI (its ci.sh, run
by the demo on each push) fails; ace sends the failure to the agent, the agent pushes a fix, CI passes, the
demo merges the pull request and the run is done. It prints each step, then the merged branch, its diff and
the pull request. Everything lives in a temporary directory (or --dir, kept afterwards); no process is left
behind.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Executable = executable()
			o.Out = app.Stdout
			o.Logger = app.Logger
			return demo.Run(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.Dir, "dir", "", "keep the demo's files in this `directory`")
	cmd.Flags().BoolVar(&o.Headless, "headless", false, "run the agent with the headless runner (runner exec) instead of in tmux")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 0, "give up after this long (default 2m)")
	return cmd
}
