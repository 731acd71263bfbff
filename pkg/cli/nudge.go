package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/aceworks/ace/pkg/workflow"
)

func newCmdNudge(app *App) *cobra.Command {
	var repo string
	cmd := &cobra.Command{
		Use:   "nudge N",
		Short: "Tell the agent to continue (monitor.nudge plus the done protocol)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := issueArg(args[0])
			if err != nil {
				return err
			}
			return runNudge(cmd.Context(), app, repo, n)
		},
	}
	cmd.Flags().StringVar(&repo, "repo", "", "repository `owner/name` when issue N exists in several")
	return cmd
}

func runNudge(ctx context.Context, app *App, repo string, n int) error {
	svc, err := app.openService(ctx, nil)
	if err != nil {
		return err
	}
	defer svc.Close()
	r, err := svc.FindRun(ctx, repo, n)
	if err != nil {
		return err
	}
	if err := svc.Engine.Nudge(ctx, r); err != nil {
		return err
	}
	if q := workflow.Queued(r); q != "" {
		// Its agent was released (stopped to free its slot): the text waits for its next start.
		fmt.Fprintf(app.Stdout, "queued for the released agent of %s#%d: %s\n", r.Repo, r.Issue, q)
		return nil
	}
	fmt.Fprintf(app.Stdout, "nudged %s\n", sessionLabel(r))
	return nil
}
