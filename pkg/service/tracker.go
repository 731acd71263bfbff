package service

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/secrets"
	"github.com/aceworks/ace/pkg/tracker"
	"github.com/aceworks/ace/pkg/tracker/github"
	"github.com/aceworks/ace/pkg/tracker/local"
)

// NewTracker builds the tracker tracker.kind names: GitHub with the token from github.token_env, or the local
// folder tracker at tracker.path.
func NewTracker(ctx context.Context, cfg *config.Config, res *secrets.Resolver, log *slog.Logger) (tracker.Tracker, error) {
	switch cfg.Tracker.Kind {
	case "local":
		if cfg.Tracker.Path == "" {
			return nil, fmt.Errorf("tracker.path: empty (the local tracker needs the folder that holds issues/)")
		}
		t, err := local.New(filepath.Clean(cfg.Tracker.Path))
		if err != nil {
			return nil, fmt.Errorf("local tracker at %s: %w", cfg.Tracker.Path, err)
		}
		return t, nil
	case "github", "":
		tok, err := res.GitHubToken(ctx, cfg.GitHub.TokenEnv)
		if err != nil {
			return nil, fmt.Errorf("GitHub token (github.token_env): %w", err)
		}
		c, err := github.New(ctx, github.Options{APIURL: cfg.GitHub.APIURL, Token: tok, Logger: log,
			CacheDir: filepath.Join(cfg.Workspace.Root, "cache", "github")})
		if err != nil {
			return nil, fmt.Errorf("GitHub client: %w", err)
		}
		return c, nil
	default:
		return nil, fmt.Errorf("tracker.kind: unknown %q (want \"github\" or \"local\")", cfg.Tracker.Kind)
	}
}
