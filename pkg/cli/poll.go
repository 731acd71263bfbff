package cli

import (
	"context"
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/service"
)

type pollOptions struct {
	Once     bool
	Interval time.Duration
	Addr     string // serve the dashboard, API and webhooks there too ("" = no)
}

func newCmdPoll(app *App) *cobra.Command {
	var o pollOptions
	cmd := &cobra.Command{
		Use:   "poll [--once]",
		Short: "Watch labelled issues and active runs (cron: --once)",
		Long: `Poll makes ace a service. Every run advances as a job of its own (look at the agent, act, wait): nudge,
restart, relay human answers, notice closed or unlabelled issues, finish. Every poll.interval it starts runs for
open issues carrying the trigger label, oldest first, up to poll.max_concurrent. SIGINT or SIGTERM lets running
steps finish and leaves agents running; the next ace picks every run up where it was. Several ace poll may run
at once (on one host, or on several sharing a database): each issue is worked by one at a time.
With --once it works every run that is due once, starts new runs until their agents have the prompt, and exits
(for cron).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("interval") {
				o.Interval = app.Config.Poll.Interval.Duration
			}
			if o.Interval <= 0 {
				return flagErrorf("--interval must be positive")
			}
			if o.Once && o.Addr != "" {
				return flagErrorf("--addr serves for as long as ace polls: it does not go with --once")
			}
			return runPoll(cmd.Context(), app, o)
		},
	}
	cmd.Flags().BoolVar(&o.Once, "once", false, "make one pass and exit")
	cmd.Flags().DurationVar(&o.Interval, "interval", 0, "time between passes (default poll.interval)")
	cmd.Flags().StringVar(&o.Addr, "addr", "", "also serve the dashboard, API and webhooks on `host:port` (as ace serve)")
	return cmd
}

func runPoll(ctx context.Context, app *App, o pollOptions) error {
	opts := app.serviceOptions(nil)
	opts.Watching = true
	opts.Dispatch = true
	cfg := *app.Config
	cfg.Poll.Interval.Duration = o.Interval
	opts.Config = &cfg
	svc, err := service.Open(ctx, opts)
	if err != nil {
		return err
	}
	defer svc.Close()
	if o.Once {
		start := time.Now()
		rep, err := svc.Queue.Once(ctx, onceBound(app.Config))
		if errors.Is(err, context.Canceled) {
			return nil
		}
		if err != nil {
			return err
		}
		app.Logger.Info("poll pass", "visited", rep.Visited, "left", rep.Left, "took", time.Since(start).Round(time.Millisecond))
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var link func(int64) string
	waitServer := func() error { return nil }
	if o.Addr != "" {
		if link, waitServer, err = startServer(ctx, app, svc, o.Addr); err != nil {
			return err
		}
	}
	waitNotifier, err := startNotifier(ctx, app, svc, link)
	if err != nil {
		cancel()
		_ = waitServer()
		return err
	}
	if err := svc.StartQueue(ctx); err != nil {
		cancel()
		_ = waitServer()
		waitNotifier()
		return err
	}
	app.Logger.Info("polling", "repos", app.Config.GitHub.Repos, "interval", o.Interval, "max_concurrent", app.Config.Poll.MaxConcurrent)
	<-ctx.Done()
	app.Logger.Info("poll stopping: running steps finish, agents keep running")
	err = waitServer()
	waitNotifier()
	return err
}

// onceBound bounds one `ace poll --once` pass: long enough for new runs to get their agents started.
func onceBound(cfg *config.Config) time.Duration {
	return 2*cfg.Tmux.StartupTimeout.Duration + time.Minute
}
