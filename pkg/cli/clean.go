package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/aceworks/ace/pkg/runbox"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tmuxops"
	"github.com/aceworks/ace/pkg/workflow"
	"github.com/aceworks/ace/pkg/workspace"
)

type cleanOptions struct {
	DryRun bool
	All    bool
}

func newCmdClean(app *App) *cobra.Command {
	var o cleanOptions
	cmd := &cobra.Command{
		Use:   "clean",
		Short: "Remove working copies of finished runs, tmux sessions no run owns and what crashed aces left",
		Long: `Clean removes the working copy of every issue whose latest run is done (its branch is pushed, so nothing
is lost), with the working copies of its best-of attempts, and ends ace tmux sessions that no unfinished run owns. With --all it also removes the working
copies of failed and cancelled runs, which may hold work that was never pushed. The store, transcripts and
mirrors are kept.

It also removes what crashed ace processes left (ace doctor names it): env files of agent starts that did not
happen (they hold the agent's secrets), the tmux control clients and sessions of dead aces and a tmux server
they left unusable, and the sockets of runs that are over; and what ace eval runs left in the eval directories
under the root (working copies, cut bases, the eval engine's files and caches, its tmux sessions) — never their
results, and nothing of an eval run that is running.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runClean(cmd.Context(), app, o)
		},
	}
	cmd.Flags().BoolVarP(&o.DryRun, "dry-run", "n", false, "say what would be removed, remove nothing")
	cmd.Flags().BoolVar(&o.All, "all", false, "also remove working copies of failed and cancelled runs")
	return cmd
}

func runClean(ctx context.Context, app *App, o cleanOptions) error {
	st, err := app.openStore(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	runs, err := st.ListRuns(ctx, store.Filter{})
	if err != nil {
		return err
	}
	ws, err := workspace.New(workspace.Options{Root: app.Config.Workspace.Root, Logger: app.Logger})
	if err != nil {
		return err
	}
	verb := "removed"
	if o.DryRun {
		verb = "would remove"
	}
	for _, r := range store.LatestPerIssue(runs) {
		if !r.Status.Terminal() {
			continue
		}
		if r.Workdir == "" || (r.Status != store.StatusDone && !o.All) {
			continue
		}
		if !o.DryRun {
			if err := ws.Remove(ctx, r.Repo, r.Issue); err != nil {
				return fmt.Errorf("remove the working copy of %s#%d: %w", r.Repo, r.Issue, err)
			}
			if err := runbox.Clean(app.Config.Workspace.Root, r); err != nil {
				return fmt.Errorf("remove the box of %s#%d: %w", r.Repo, r.Issue, err)
			}
		}
		fmt.Fprintf(app.Stdout, "%s %s (%s#%d, %s)\n", verb, r.Workdir, r.Repo, r.Issue, r.Status)
	}
	for _, r := range workflow.FinishedAttempts(runs, o.All) {
		a := r.State.AttemptOf
		if !o.DryRun {
			if err := ws.RemoveCopy(ctx, r.Repo, r.Issue, a.K); err != nil {
				return fmt.Errorf("remove the working copy of %s#%d's attempt %d: %w", r.Repo, r.Issue, a.K, err)
			}
			if err := runbox.Clean(app.Config.Workspace.Root, r); err != nil {
				return fmt.Errorf("remove the box of %s#%d's attempt %d: %w", r.Repo, r.Issue, a.K, err)
			}
		}
		fmt.Fprintf(app.Stdout, "%s %s (%s#%d, best-of attempt %d, %s)\n", verb, r.Workdir, r.Repo, r.Issue, a.K, r.Status)
	}
	left, err := workflow.CrashLeftovers(ctx, app.Config.Workspace.Root, tmuxops.New(app.Config.Tmux.Socket), runs, !o.DryRun)
	for _, l := range left {
		fmt.Fprintf(app.Stdout, "%s %s\n", verb, l)
	}
	evalLeft, evalErr := evalLeftovers(ctx, app, !o.DryRun)
	for _, l := range evalLeft {
		fmt.Fprintf(app.Stdout, "%s %s\n", verb, l)
	}
	return errors.Join(err, evalErr)
}
