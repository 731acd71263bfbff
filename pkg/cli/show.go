package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/aceworks/ace/pkg/runbox"
	"github.com/aceworks/ace/pkg/transcript"
	"github.com/aceworks/ace/pkg/workflow"
)

func newCmdShow(app *App) *cobra.Command {
	var repo string
	cmd := &cobra.Command{
		Use:   "show N",
		Short: "Show a run: its fields and its event log",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := issueArg(args[0])
			if err != nil {
				return err
			}
			return runShow(cmd.Context(), app, repo, n)
		},
	}
	cmd.Flags().StringVar(&repo, "repo", "", "repository `owner/name` when issue N exists in several")
	return cmd
}

func runShow(ctx context.Context, app *App, repo string, n int) error {
	st, r, err := app.findRun(ctx, repo, n)
	if err != nil {
		return err
	}
	defer st.Close()
	w := app.Stdout
	field := func(k, v string) {
		if v != "" && v != "0" {
			fmt.Fprintf(w, "%-14s %s\n", k, v)
		}
	}
	field("run", fmt.Sprint(r.ID))
	field("issue", fmt.Sprintf("%s#%d", r.Repo, r.Issue))
	field("attempt", fmt.Sprint(r.Attempt))
	field("agent", strings.TrimSpace(r.Agent+" "+r.State.AgentCLI.String()))
	field("runner", r.Runner)
	field("status", string(r.Status))
	field("step", r.Step)
	field("session", r.Session)
	if line := workflow.AgentLine(r); line != "" {
		field("agent now", line+" (host "+r.Host+")") // working, idle, released, waiting for a slot
	}
	field("conversation", r.AgentSessionID)
	if t, ok := transcript.Of(app.Config.Workspace.Root, r); ok && t.Headless() {
		field("transcript", t.Path)
	}
	field("workdir", r.Workdir)
	field("branch", r.Branch)
	field("base", r.BaseBranch)
	field("pull request", r.PRURL)
	field("nudges", fmt.Sprint(r.Nudges))
	field("restarts", fmt.Sprint(r.Restarts))
	field("usage", workflow.UsageLine(r.State.Usage))
	field("sandbox", runbox.Line(r))
	field("refused", workflow.RefusedLine(r))
	field("model", workflow.ReachHelp(r))
	if !r.State.ResumeAt.IsZero() {
		field("resumes at", r.State.ResumeAt.UTC().Format(time.RFC3339))
	}
	field("error", r.Error)
	field("created", r.CreatedAt.Local().Format(time.DateTime))
	if r.FinishedAt != nil {
		field("finished", r.FinishedAt.Local().Format(time.DateTime))
	}
	evs, err := st.Events(ctx, r.ID)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nevents:\n")
	for _, ev := range evs {
		fmt.Fprintf(w, "  %s  %-14s %-18s %s\n", ev.Time.Local().Format("15:04:05"), ev.Kind, ev.Step, ev.Message)
	}
	return nil
}
