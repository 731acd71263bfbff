package service

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/secrets"
	"github.com/aceworks/ace/pkg/tracker"
	"github.com/aceworks/ace/pkg/tracker/github"
	"github.com/aceworks/ace/pkg/tracker/local"
	"github.com/aceworks/ace/pkg/workflow"
	"github.com/aceworks/ace/pkg/workspace"
)

// Tracker is a tracker as ace's parts use it: the engine's part (workflow.Tracker) and the credential ace's git
// asks of it for a remote (workspace.Auth). Each part declares what it uses; this is only their sum.
type Tracker interface {
	workflow.Tracker
	workspace.Auth
}

// trackerKinds lists the trackers tracker.kind can name, the default first. Adding a tracker is a folder under
// pkg/tracker (its Open and Doctor, and the methods of Tracker) and a line here.
func trackerKinds() []trackerKind {
	return []trackerKind{
		kind("github", github.Open, github.Doctor),
		kind("local", local.Open, local.Doctor),
	}
}

// trackerKind is one tracker of the list: how it is opened, and how `ace doctor` looks at it.
type trackerKind struct {
	name   string
	open   func(context.Context, tracker.Setup) (Tracker, error)
	doctor func(context.Context, tracker.Setup) (string, error)
}

// kind is a line of the list: a tracker's Open returns its own type, which must be a Tracker.
func kind[T Tracker](name string, open func(context.Context, tracker.Setup) (T, error),
	doctor func(context.Context, tracker.Setup) (string, error)) trackerKind {
	return trackerKind{name: name, doctor: doctor, open: func(ctx context.Context, s tracker.Setup) (Tracker, error) {
		t, err := open(ctx, s)
		if err != nil {
			return nil, err
		}
		return t, nil
	}}
}

// setup is what the configuration says to the trackers.
func (k trackerKind) setup(cfg *config.Config, res *secrets.Resolver, log *slog.Logger) tracker.Setup {
	return tracker.Setup{Path: cfg.Tracker.Path, APIURL: cfg.GitHub.APIURL, TokenEnv: cfg.GitHub.TokenEnv,
		CacheDir: filepath.Join(cfg.Workspace.Root, "cache", k.name), Secrets: res, Logger: log}
}

// trackerOf is the kind tracker.kind names ("": the first).
func trackerOf(cfg *config.Config) (trackerKind, error) {
	kinds := trackerKinds()
	var names []string
	for _, k := range kinds {
		if k.name == cfg.Tracker.Kind || cfg.Tracker.Kind == "" {
			return k, nil
		}
		names = append(names, fmt.Sprintf("%q", k.name))
	}
	return trackerKind{}, fmt.Errorf("tracker.kind: unknown %q (want %s)", cfg.Tracker.Kind, strings.Join(names, " or "))
}

// NewTracker opens the tracker tracker.kind names (github: the token from github.token_env; local: the folder at
// tracker.path).
func NewTracker(ctx context.Context, cfg *config.Config, res *secrets.Resolver, log *slog.Logger) (Tracker, error) {
	k, err := trackerOf(cfg)
	if err != nil {
		return nil, err
	}
	return k.open(ctx, k.setup(cfg, res, log))
}

// CheckTracker is `ace doctor`'s look at the configured tracker: what it reached, or why not (an error wrapping
// tracker.ErrUnreachable when the tracker could not tell).
func CheckTracker(ctx context.Context, cfg *config.Config, res *secrets.Resolver, log *slog.Logger) (string, error) {
	k, err := trackerOf(cfg)
	if err != nil {
		return "", err
	}
	return k.doctor(ctx, k.setup(cfg, res, log))
}
