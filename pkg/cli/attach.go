package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/aceworks/ace/pkg/tmuxops"
	"github.com/aceworks/ace/pkg/workflow"
)

func newCmdAttach(app *App) *cobra.Command {
	var repo string
	cmd := &cobra.Command{
		Use:   "attach N",
		Short: "Attach your terminal to the agent's tmux session (detach with Ctrl-b d)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := issueArg(args[0])
			if err != nil {
				return err
			}
			return runAttach(cmd.Context(), app, repo, n)
		},
	}
	cmd.Flags().StringVar(&repo, "repo", "", "repository `owner/name` when issue N exists in several")
	return cmd
}

func runAttach(ctx context.Context, app *App, repo string, n int) error {
	st, r, err := app.findRun(ctx, repo, n)
	if err != nil {
		return err
	}
	st.Close()
	if !workflow.Describe(r).HasScreen() {
		return noScreen(r, "attach to")
	}
	argv, err := workflow.AttachCommand(ctx, tmuxops.New(app.Config.Tmux.Socket), r)
	if err != nil {
		return err
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return fmt.Errorf("tmux: %w", err)
	}
	// Replace ace with tmux: the terminal belongs to tmux until the user detaches.
	return syscall.Exec(path, argv, os.Environ())
}
