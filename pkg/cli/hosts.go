package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/aceworks/ace/pkg/workflow"
	"github.com/spf13/cobra"
)

func newCmdHosts(app *App) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "hosts",
		Short: "List the ace hosts sharing this store, with their load and last heartbeat",
		Long: `Hosts lists every ace host that works runs from this store (a fleet shares one PostgreSQL; on SQLite there is
one): its live agents against its poll.max_concurrent (AGENTS), of them those working (WORKING) and those kept
idle while nobody needs their slot (IDLE: a pull request, a human or a usage limit waited for; the first to give
way when a run needs a slot), its runs waiting for a slot and how long the first has waited (WAITING), the
working copies it holds (HELD: every unfinished run's, released ones included), when it last said it is alive,
and whether it is taken for dead (silent for host.dead_after: its runs move to another host). The last line is
the queue: the issues waiting for a slot (labelled and not started, or waiting on a host) and the oldest wait.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runHosts(cmd.Context(), app, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print hosts as JSON")
	return cmd
}

func runHosts(ctx context.Context, app *App, asJSON bool) error {
	st, err := app.openStore(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	now := time.Now()
	f, err := workflow.ReadFleet(ctx, st, app.Config.Host.DeadAfter.Duration, now)
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(app.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(f)
	}
	if len(f.Hosts) == 0 {
		fmt.Fprintln(app.Stdout, "no hosts yet: a host appears once its `ace poll` (or `ace run`) works runs")
		return nil
	}
	tw := tabwriter.NewWriter(app.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tSTATE\tAGENTS\tWORKING\tIDLE\tWAITING\tHELD\tHEARTBEAT\tUP SINCE")
	for _, h := range f.Hosts {
		state := "alive"
		if !h.Alive {
			state = "dead"
		}
		waiting := fmt.Sprint(h.Waiting)
		if h.Waiting > 0 {
			waiting += " (" + workflow.Ago(now, h.OldestWait) + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%d\t%d\t%s\t%d\t%s ago\t%s\n", h.Name, state, h.Live, h.MaxConcurrent, h.Working,
			h.Idle, waiting, h.Held, now.Sub(h.HeartbeatAt).Round(time.Second), h.StartedAt.Local().Format(time.DateTime))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err = fmt.Fprintln(app.Stdout, f.DescribeQueue(now))
	return err
}
