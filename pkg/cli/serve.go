package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/spf13/cobra"

	"github.com/aceworks/ace/pkg/notify"
	"github.com/aceworks/ace/pkg/serve"
	"github.com/aceworks/ace/pkg/service"
)

func newCmdServe(app *App) *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:   "serve [--addr 127.0.0.1:7777]",
		Short: "ace poll with the dashboard, the JSON API, GitHub webhooks and /metrics",
		Long: `Serve works runs exactly like ace poll and serves, on the same store:
  /                       the dashboard: every run, live; a run's screen, timeline and transcript; send, nudge, stop
  /api/v1/runs            the runs as JSON (/api/v1/runs/{id} with its events, …/screen, …/transcript,
                          POST …/send, …/nudge, …/stop); /api/v1/events streams run events (Server-Sent Events)
  /webhook/github         GitHub webhooks (signed with serve.webhook_secret_env): a labelled issue starts now
  /metrics, /healthz      Prometheus metrics, liveness
It listens on 127.0.0.1 unless told otherwise; any other address needs serve.token_env. [[notify]] receivers
hear about runs that need input, fail, or open a pull request. ace poll --addr does the same.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("addr") {
				addr = app.Config.Serve.Addr
			}
			return runPoll(cmd.Context(), app, pollOptions{Interval: app.Config.Poll.Interval.Duration, Addr: addr})
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "", "listen on `host:port` (default serve.addr, 127.0.0.1:7777)")
	return cmd
}

// serveOptions builds the server's options from the configuration and the environment.
func serveOptions(app *App, svc *service.Service, addr string) (serve.Options, error) {
	cfg := app.Config.Serve
	o := serve.Options{Store: svc.Store, Engine: svc.Engine, Queue: svc.Queue, Root: svc.Root, SharedEvals: svc.SharedEvals(), Addr: addr,
		DeadAfter:    app.Config.Host.DeadAfter.Duration,
		TriggerLabel: app.Config.Trigger.Label, MaxBody: cfg.MaxBodyBytes, Redactor: app.Redactor, Logger: app.Logger}
	var err error
	if o.Token, err = fromEnv(app, "serve.token_env", cfg.TokenEnv); err != nil {
		return o, err
	}
	if o.WebhookSecret, err = fromEnv(app, "serve.webhook_secret_env", cfg.WebhookSecretEnv); err != nil {
		return o, err
	}
	return o, nil
}

// fromEnv reads the variable a *_env key names ("" when the key is empty); a named variable must be set.
func fromEnv(app *App, key, name string) (string, error) {
	if name == "" {
		return "", nil
	}
	v := app.Getenv(name)
	if v == "" {
		return "", fmt.Errorf("%s names %s, which is not set", key, name)
	}
	app.Redactor.Add(v)
	return v, nil
}

// startNotifier sends run events to the [[notify]] receivers until ctx ends; link makes a run's dashboard link
// (nil when nothing is served). The returned function waits for it to finish.
func startNotifier(ctx context.Context, app *App, svc *service.Service, link func(int64) string) (func(), error) {
	if len(app.Config.Notify) == 0 {
		return func() {}, nil
	}
	var receivers []notify.Receiver
	for i, n := range app.Config.Notify {
		url := n.URL
		if n.URLEnv != "" {
			var err error
			if url, err = fromEnv(app, fmt.Sprintf("notify[%d].url_env", i), n.URLEnv); err != nil {
				return nil, err
			}
		}
		if n.Kind == "slack" {
			app.Redactor.Add(url) // a Slack webhook URL is its own credential
		}
		receivers = append(receivers, notify.Receiver{Kind: n.Kind, URL: url, Events: n.Events})
	}
	n := notify.New(notify.Options{Receivers: receivers, Logger: app.Logger, Link: link})
	events, unsubscribe := svc.Engine.Subscribe(256)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer unsubscribe()
		n.Run(ctx, events)
	})
	return wg.Wait, nil
}

// startServer serves on addr until ctx ends; the returned function waits for it to finish and returns its error.
func startServer(ctx context.Context, app *App, svc *service.Service, addr string) (link func(int64) string, wait func() error, err error) {
	o, err := serveOptions(app, svc, addr)
	if err != nil {
		return nil, nil, err
	}
	srv, err := serve.New(o)
	if err != nil {
		return nil, nil, err
	}
	ready := make(chan net.Addr, 1)
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe(ctx, addr, func(a net.Addr) { ready <- a }) }()
	select {
	case err := <-errc:
		return nil, nil, err
	case a := <-ready:
		base := "http://" + a.String()
		app.Logger.Info("serving", "dashboard", base+"/", "api", base+"/api/v1/runs", "webhooks", o.WebhookSecret != "",
			"token", o.Token != "")
		fmt.Fprintf(app.Stderr, "ace: dashboard at %s/\n", base)
		return func(id int64) string { return fmt.Sprintf("%s/#run-%d", base, id) }, func() error {
			err := <-errc
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		}, nil
	}
}
