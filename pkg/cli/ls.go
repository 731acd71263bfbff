package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

func newCmdLs(app *App) *cobra.Command {
	var asJSON, all bool
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List runs",
		Long:  "List the latest run of every issue (all attempts with --all): repo, issue, agent, step, status, age, session, PR.",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runLs(cmd.Context(), app, asJSON, all)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print runs as JSON")
	cmd.Flags().BoolVar(&all, "all", false, "show every attempt, not only the latest per issue")
	return cmd
}

func runLs(ctx context.Context, app *App, asJSON, all bool) error {
	st, err := app.openStore(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	runs, err := st.ListRuns(ctx, store.Filter{})
	if err != nil {
		return err
	}
	if !all {
		runs = store.LatestPerIssue(runs)
	}
	if asJSON {
		enc := json.NewEncoder(app.Stdout)
		enc.SetIndent("", "  ")
		if runs == nil {
			runs = []*store.Run{}
		}
		return enc.Encode(runs)
	}
	if len(runs) == 0 {
		fmt.Fprintln(app.Stdout, "no runs yet: start one with `ace run --issue N` or label an issue and run `ace poll`")
		return nil
	}
	tw := tabwriter.NewWriter(app.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REPO\tISSUE\tATTEMPT\tAGENT\tSTEP\tSTATUS\tAGE\tTOKENS\tCOST\tSESSION\tPR")
	now := time.Now()
	for _, r := range runs {
		pr := "-"
		if r.PRURL != "" {
			pr = r.PRURL
		}
		session := workflow.Describe(r).Session(r)
		if line := workflow.AgentLine(r); line != "" && line != "working" {
			session += " (" + line + ")" // idle, released, waiting for a slot…
		}
		status := string(r.Status)
		if r.Status == store.StatusPausedLimit {
			status += " until " + r.State.ResumeAt.Local().Format("15:04")
		}
		if r.State.Reach != nil && !r.Status.Terminal() {
			status += ", model unreachable" // ace show N says where and why
		}
		tokens, cost := "-", "-"
		if u := r.State.Usage; u != nil {
			tokens, cost = fmt.Sprint(u.Tokens()), fmt.Sprintf("$%.2f", u.CostUSD)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Repo, r.Issue, r.Attempt, r.Agent, r.Step, status,
			workflow.Ago(now, r.CreatedAt), tokens, cost, session, pr)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return printSlots(ctx, app, st, now)
}

// printSlots ends the table with each live host's slots — agents working and idle against poll.max_concurrent,
// the runs waiting for one, the working copies held — and the queue's wait.
func printSlots(ctx context.Context, app *App, st workflow.FleetReader, now time.Time) error {
	f, err := workflow.ReadFleet(ctx, st, app.Config.Host.DeadAfter.Duration, now)
	if err != nil {
		return err
	}
	for _, h := range f.Hosts {
		if h.Alive {
			fmt.Fprintf(app.Stdout, "host %s: %s\n", h.Name, h.Describe(now))
		}
	}
	if f.Waiting().Issues() == 0 && len(f.Hosts) == 0 {
		return nil
	}
	_, err = fmt.Fprintln(app.Stdout, f.DescribeQueue(now))
	return err
}
