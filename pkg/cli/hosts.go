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
one): its live agents against its poll.max_concurrent (AGENTS), the rounds of released runs waiting for a slot
(WAITING), the working copies it holds (HELD: every unfinished run's, released ones included), when it last
said it is alive, and whether it is taken for dead (silent for host.dead_after: its runs move to another host).`,
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
	hosts, err := workflow.FleetSlots(ctx, st, app.Config.Host.DeadAfter.Duration, now)
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(app.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(hosts)
	}
	if len(hosts) == 0 {
		fmt.Fprintln(app.Stdout, "no hosts yet: a host appears once its `ace poll` (or `ace run`) works runs")
		return nil
	}
	tw := tabwriter.NewWriter(app.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tSTATE\tAGENTS\tWAITING\tHELD\tHEARTBEAT\tUP SINCE")
	for _, h := range hosts {
		state := "alive"
		if !h.Alive {
			state = "dead"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%d\t%d\t%s ago\t%s\n", h.Name, state, h.Live, h.MaxConcurrent, h.Waiting, h.Held,
			now.Sub(h.HeartbeatAt).Round(time.Second), h.StartedAt.Local().Format(time.DateTime))
	}
	return tw.Flush()
}
