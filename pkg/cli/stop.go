package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/aceworks/ace/pkg/workflow"
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
	// A foreground `ace run` may hold the claim; stop anyway: the store's optimistic versions make that process
	// notice the cancellation on its next write.
	release, err := svc.Engine.Acquire(ctx, r.Repo, r.Issue)
	switch {
	case err == nil:
		defer release()
	case !errors.Is(err, workflow.ErrBusy):
		return err
	}
	if r, err = svc.Store.GetRun(ctx, r.ID); err != nil {
		return err
	}
	if err := svc.Engine.Stop(ctx, r, "stopped with ace stop"); err != nil {
		return err
	}
	fmt.Fprintf(app.Stdout, "%s#%d: run %d cancelled; the working copy stays at %s\n", r.Repo, n, r.ID, r.Workdir)
	return nil
}
