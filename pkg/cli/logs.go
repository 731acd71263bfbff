package cli

import (
	"context"
	"fmt"

	"github.com/aceworks/ace/pkg/transcript"
	"github.com/spf13/cobra"
)

func newCmdLogs(app *App) *cobra.Command {
	var repo string
	var follow, asJSON bool
	cmd := &cobra.Command{
		Use:   "logs N",
		Short: "Print the agent's transcript (-f to follow, --json for a headless run's typed events)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := issueArg(args[0])
			if err != nil {
				return err
			}
			return runLogs(cmd.Context(), app, repo, n, follow, asJSON)
		},
	}
	cmd.Flags().StringVar(&repo, "repo", "", "repository `owner/name` when issue N exists in several")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing as the transcript grows (Ctrl-C to stop)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "headless runs: print the typed events as JSON lines")
	return cmd
}

func runLogs(ctx context.Context, app *App, repo string, n int, follow, asJSON bool) error {
	st, r, err := app.findRun(ctx, repo, n)
	if err != nil {
		return err
	}
	st.Close()
	t, ok := transcript.Of(app.Config.Workspace.Root, r)
	if !ok {
		return fmt.Errorf("%s#%d has no transcript yet (run %d is at %s)", r.Repo, n, r.ID, r.Step)
	}
	if asJSON && !t.Headless() {
		return flagErrorf("--json: %s#%d runs in tmux; its transcript is a terminal log, not typed events", r.Repo, n)
	}
	if err := t.Copy(ctx, app.Stdout, follow, asJSON); err != nil {
		return fmt.Errorf("transcript of %s#%d: %w", r.Repo, n, err)
	}
	return nil
}
