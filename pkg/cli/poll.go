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
	"github.com/aceworks/ace/pkg/workflow"
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
		Long: `Poll makes ace a service. It watches every active run each monitor.interval (nudge, restart, relay
human answers, notice closed or unlabelled issues, finish) and every poll.interval starts runs for open issues
carrying the trigger label, oldest first, up to poll.max_concurrent. Interrupting it leaves agents running.
One ace poll serves a workspace.root at a time (a lock under it): a second one waits and takes over when the
first ends. With --once it makes one pass of both and exits (for cron); a pass that finds the lock taken exits
at once.`,
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
	svc, err := app.openWatchingService(ctx, nil)
	if err != nil {
		return err
	}
	defer svc.Close()
	lock := flock.New(filepath.Join(svc.Root, "poll.lock"))
	if o.Once {
		return pollPass(ctx, app, svc, lock)
	}
	err = serve(ctx, app, svc, lock, o.Interval)
	if errors.Is(err, context.Canceled) {
		app.Logger.Info("poll stopped; agents keep running in tmux")
		return nil
	}
	return err
}

// serve is `ace poll` as a service. It holds the poll lock for as long as it runs (a second one waits and takes
// over when the first ends), gives every run a monitor tick each monitor.interval through one Watcher, and looks
// for newly labelled issues every interval.
func serve(ctx context.Context, app *App, svc *service.Service, lock *flock.Flock, interval time.Duration) error {
	w := svc.Engine.NewWatcher()
	defer w.Close(ctx)
	defer func() {
		if lock.Locked() {
			_ = lock.Unlock()
		}
	}()
	tick := app.Config.Monitor.Interval.Duration
	var nextDispatch time.Time
	told := false
	for {
		if !lock.Locked() {
			ok, err := lock.TryLock()
			if err != nil {
				return fmt.Errorf("poll lock %s: %w", lock.Path(), err)
			}
			if !ok && !told {
				fmt.Fprintf(app.Stdout, "another ace poll is running (lock %s); waiting to take over\n", lock.Path())
				told = true
			}
		}
		if lock.Locked() {
			if err := servePass(ctx, app, svc, w, &nextDispatch, interval); err != nil {
				return err
			}
		}
		t := time.NewTimer(tick)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// servePass ticks every run, and every interval also starts runs for newly labelled issues.
func servePass(ctx context.Context, app *App, svc *service.Service, w *workflow.Watcher, next *time.Time, interval time.Duration) error {
	wrep, err := w.Pass(ctx)
	if err != nil {
		return err
	}
	for _, e := range wrep.Errors {
		app.Logger.Warn("watch", "err", e)
	}
	if time.Now().Before(*next) {
		return nil
	}
	*next = time.Now().Add(interval)
	repos, err := svc.Repos(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	var rep workflow.PollReport
	if err := svc.Engine.Dispatch(ctx, repos, app.Config.Poll.MaxConcurrent, &rep); err != nil {
		return err
	}
	rep.Ticked = wrep.Ticked
	logPass(app, len(repos), rep, start)
	return nil
}

// logPass logs what a pass did, and each error of it.
func logPass(app *App, repos int, rep workflow.PollReport, start time.Time) {
	for _, e := range rep.Errors {
		app.Logger.Warn("poll", "err", e)
	}
	app.Logger.Info("poll pass", "repos", repos, "ticked", rep.Ticked, "started", rep.Started, "skipped", rep.Skipped,
		"untrusted", rep.Untrusted, "errors", len(rep.Errors), "took", time.Since(start).Round(time.Millisecond))
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
	logPass(app, len(repos), rep, start)
	return nil
}
