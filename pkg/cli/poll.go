package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"
	"github.com/spf13/cobra"

	"github.com/aceworks/ace/pkg/service"
)

type pollOptions struct {
	Once     bool
	Interval time.Duration
}

func newCmdPoll(app *App) *cobra.Command {
	var o pollOptions
	cmd := &cobra.Command{
		Use:   "poll [--once]",
		Short: "Watch labelled issues and active runs (cron: --once)",
		Long: `Poll makes ace a service. Each pass ticks every active run once (monitor, relay human answers, notice
closed or unlabelled issues), then starts runs for open issues carrying the trigger label, oldest first, up to
poll.max_concurrent. With --once it makes one pass and exits (for cron); otherwise it repeats every
poll.interval until interrupted, leaving agents running. Only one pass runs at a time (a lock under
workspace.root); a second one exits at once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("interval") {
				o.Interval = app.Config.Poll.Interval.Duration
			}
			if o.Interval <= 0 {
				return flagErrorf("--interval must be positive")
			}
			return runPoll(cmd.Context(), app, o)
		},
	}
	cmd.Flags().BoolVar(&o.Once, "once", false, "make one pass and exit")
	cmd.Flags().DurationVar(&o.Interval, "interval", 0, "time between passes (default poll.interval)")
	return cmd
}

func runPoll(ctx context.Context, app *App, o pollOptions) error {
	svc, err := app.openService(ctx, nil)
	if err != nil {
		return err
	}
	defer svc.Close()
	lock := flock.New(filepath.Join(svc.Root, "poll.lock"))
	for {
		if err := pollPass(ctx, app, svc, lock); err != nil {
			return err
		}
		if o.Once {
			return nil
		}
		t := time.NewTimer(o.Interval)
		select {
		case <-ctx.Done():
			t.Stop()
			app.Logger.Info("poll stopped; agents keep running in tmux")
			return nil
		case <-t.C:
		}
	}
}

// pollPass makes one reconcile pass under the poll lock; a pass already running elsewhere is not an error.
func pollPass(ctx context.Context, app *App, svc *service.Service, lock *flock.Flock) error {
	ok, err := lock.TryLock()
	if err != nil {
		return fmt.Errorf("poll lock %s: %w", lock.Path(), err)
	}
	if !ok {
		fmt.Fprintf(app.Stdout, "another ace poll pass is running (lock %s); nothing to do\n", lock.Path())
		return nil
	}
	defer lock.Unlock()
	repos, err := svc.Repos(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	rep, err := svc.Engine.PollOnce(ctx, repos, app.Config.Poll.MaxConcurrent)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	}
	for _, e := range rep.Errors {
		app.Logger.Warn("poll", "err", e)
	}
	app.Logger.Info("poll pass", "repos", len(repos), "ticked", rep.Ticked, "started", rep.Started,
		"skipped", rep.Skipped, "untrusted", rep.Untrusted, "errors", len(rep.Errors), "took", time.Since(start).Round(time.Millisecond))
	return nil
}
