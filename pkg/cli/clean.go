package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

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
		Short: "Remove working copies of finished runs and tmux sessions no run owns",
		Long: `Clean removes the working copy of every issue whose latest run is done (its branch is pushed, so nothing
is lost), and ends ace tmux sessions that no unfinished run owns. With --all it also removes the working
copies of failed and cancelled runs, which may hold work that was never pushed. The store, transcripts and
mirrors are kept.`,
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
	owned := map[string]bool{}
	for _, r := range store.LatestPerIssue(runs) {
		if !r.Status.Terminal() {
			owned[r.Session] = true
			continue
		}
		if r.Workdir == "" || (r.Status != store.StatusDone && !o.All) {
			continue
		}
		if !o.DryRun {
			if err := ws.Remove(ctx, r.Repo, r.Issue); err != nil {
				return fmt.Errorf("remove the working copy of %s#%d: %w", r.Repo, r.Issue, err)
			}
			if err := workflow.RemoveBox(app.Config.Workspace.Root, r); err != nil {
				return fmt.Errorf("remove the box of %s#%d: %w", r.Repo, r.Issue, err)
			}
		}
		fmt.Fprintf(app.Stdout, "%s %s (%s#%d, %s)\n", verb, r.Workdir, r.Repo, r.Issue, r.Status)
	}
	orphans, err := workflow.Orphans(ctx, tmuxops.New(app.Config.Tmux.Socket), owned, !o.DryRun)
	for _, s := range orphans {
		fmt.Fprintf(app.Stdout, "%s tmux session %s (no unfinished run owns it)\n", verb, s)
	}
	if err != nil {
		return err
	}
	return nil
}
