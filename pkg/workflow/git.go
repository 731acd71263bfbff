package workflow

import (
	"context"
	"strings"
)

// gitToken is the token for clone, fetch and push: GitHub's when the tracker is GitHub, none otherwise.
func (e *Engine) gitToken(ctx context.Context) (string, error) {
	if e.cfg.Tracker.Kind != "github" {
		return "", nil
	}
	tok, err := e.o.Secrets.GitHubToken(ctx, e.cfg.GitHub.TokenEnv)
	if err != nil {
		return "", Terminalf("no GitHub token (looked for %s): %w", strings.Join(e.cfg.GitHub.TokenEnv, ", "), err)
	}
	return tok, nil
}
