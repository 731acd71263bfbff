package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
)

func newCmdStop(app *App) *cobra.Command {
	var repo string
	cmd := &cobra.Command{
		Use:   "stop N",
		Short: "Stop the agent of issue N and mark its run cancelled (the working copy is kept)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := issueArg(args[0])
			if err != nil {
				return err
			}
			return runStop(cmd.Context(), app, repo, n)
		},
	}
	cmd.Flags().StringVar(&repo, "repo", "", "repository `owner/name` when issue N exists in several")
	return cmd
}

func runStop(ctx context.Context, app *App, repo string, n int) error {
	svc, err := app.openService(ctx, nil)
	if err != nil {
		return err
	}
	defer svc.Close()
	r, err := svc.FindRun(ctx, repo, n)
	if err != nil {
		return err
	}
	if r.Status.Terminal() {
		fmt.Fprintf(app.Stdout, "%s#%d: run %d already ended (%s)\n", r.Repo, n, r.ID, r.Status)
		return nil
	}
	// The cancelled step runs as the run's job: this process works the queue until it is done (another ace
	// working the run notices the cancellation on its next write).
	if err := svc.StartQueue(ctx); err != nil {
		return err
	}
	if err := svc.Engine.Stop(ctx, r, "stopped with ace stop"); err != nil {
		return err
	}
	fmt.Fprintf(app.Stdout, "%s#%d: run %d cancelled; the working copy stays at %s\n", r.Repo, n, r.ID, r.Workdir)
	return nil
}
