package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aceworks/ace/pkg/workflow"
)

func newCmdSend(app *App) *cobra.Command {
	var repo string
	cmd := &cobra.Command{
		Use:   `send N "text"`,
		Short: "Type text into the agent's session (\"-\" reads it from stdin)",
		Long: `Send pastes text into the live agent session of issue N and submits it, exactly as given. A run that
waits for a human's answer resumes monitoring. A run whose agent was released (stopped to free its slot, its
conversation kept) queues the text: the run takes a slot and its agent starts again in its conversation with it.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := issueArg(args[0])
			if err != nil {
				return err
			}
			text := args[1]
			if text == "-" {
				b, err := io.ReadAll(cmd.InOrStdin())
				if err != nil {
					return err
				}
				text = strings.TrimRight(string(b), "\n")
			}
			if strings.TrimSpace(text) == "" {
				return flagErrorf("nothing to send")
			}
			return runSend(cmd.Context(), app, repo, n, text)
		},
	}
	cmd.Flags().StringVar(&repo, "repo", "", "repository `owner/name` when issue N exists in several")
	return cmd
}

func runSend(ctx context.Context, app *App, repo string, n int, text string) error {
	svc, err := app.openService(ctx, nil)
	if err != nil {
		return err
	}
	defer svc.Close()
	r, err := svc.FindRun(ctx, repo, n)
	if err != nil {
		return err
	}
	// The text goes into the session whoever works the run (ace poll, a foreground ace run); the store's
	// optimistic versions make that process see the run change on its next write, and its job is woken.
	if err := svc.Engine.Send(ctx, r, text); err != nil {
		return err
	}
	if q := workflow.Queued(r); q != "" {
		// Its agent was released (stopped to free its slot): the text waits for its next start.
		fmt.Fprintf(app.Stdout, "queued for the released agent of %s#%d: %s\n", r.Repo, r.Issue, q)
		return nil
	}
	fmt.Fprintf(app.Stdout, "sent to %s\n", sessionLabel(r))
	return nil
}
