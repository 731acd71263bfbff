package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/aceworks/ace/pkg/store"
)

func newCmdHosts(app *App) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "hosts",
		Short: "List the ace hosts sharing this store, with their load and last heartbeat",
		Long: `Hosts lists every ace host that works runs from this store (a fleet shares one PostgreSQL; on SQLite there is
one): its runs held against its poll.max_concurrent, when it last said it is alive, and whether it is taken for
dead (silent for host.dead_after: its runs move to another host).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runHosts(cmd.Context(), app, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print hosts as JSON")
	return cmd
}

// hostView is a host as `ace hosts` shows it.
type hostView struct {
	store.Host
	Alive bool `json:"alive"`
}

func runHosts(ctx context.Context, app *App, asJSON bool) error {
	st, err := app.openStore(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	hosts, err := st.Hosts(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	views := make([]hostView, 0, len(hosts))
	for _, h := range hosts {
		views = append(views, hostView{Host: h, Alive: now.Sub(h.HeartbeatAt) < app.Config.Host.DeadAfter.Duration})
	}
	if asJSON {
		enc := json.NewEncoder(app.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(views)
	}
	if len(views) == 0 {
		fmt.Fprintln(app.Stdout, "no hosts yet: a host appears once its `ace poll` (or `ace run`) works runs")
		return nil
	}
	tw := tabwriter.NewWriter(app.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tSTATE\tRUNS\tHEARTBEAT\tUP SINCE")
	for _, v := range views {
		state := "alive"
		if !v.Alive {
			state = "dead"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%s ago\t%s\n", v.Name, state, v.Running, v.MaxConcurrent,
			now.Sub(v.HeartbeatAt).Round(time.Second), v.StartedAt.Local().Format(time.DateTime))
	}
	return tw.Flush()
}
