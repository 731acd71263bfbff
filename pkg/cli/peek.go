package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/aceworks/ace/pkg/tmuxops"
	"github.com/aceworks/ace/pkg/workflow"
)

func newCmdPeek(app *App) *cobra.Command {
	var repo string
	var history int
	cmd := &cobra.Command{
		Use:   "peek N",
		Short: "Print the agent's current screen",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := issueArg(args[0])
			if err != nil {
				return err
			}
			return runPeek(cmd.Context(), app, repo, n, history)
		},
	}
	cmd.Flags().StringVar(&repo, "repo", "", "repository `owner/name` when issue N exists in several")
	cmd.Flags().IntVar(&history, "history", 0, "also print this many `lines` of scrollback")
	return cmd
}

func runPeek(ctx context.Context, app *App, repo string, n, history int) error {
	st, r, err := app.findRun(ctx, repo, n)
	if err != nil {
		return err
	}
	st.Close()
	if !workflow.Describe(r).HasScreen() {
		return noScreen(r, "show")
	}
	screen, err := workflow.Peek(ctx, tmuxops.New(app.Config.Tmux.Socket), r, history)
	if err != nil {
		return err
	}
	fmt.Fprintln(app.Stdout, screen)
	return nil
}
