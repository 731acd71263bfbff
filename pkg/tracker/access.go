package tracker

import (
	"context"
	"log/slog"

	"github.com/aceworks/ace/pkg/config"
)

// Setup is what a tracker is opened with: the configuration (tracker.kind and its own keys), the secrets its
// credential is looked up in, and the log.
type Setup struct {
	Config  *config.Config
	Secrets Secrets
	Logger  *slog.Logger
}

// Secrets resolves a named secret (pkg/secrets); a name that resolves nowhere is an error wrapping
// secrets.ErrNotFound.
type Secrets interface {
	Resolve(ctx context.Context, name string) (string, error)
}

// Endpoint is a URL of the tracker that a run's agent may reach from its box, with what named it (a key of
// ace.toml, or a few words).
type Endpoint struct {
	From, URL string
}

// NoCredential is embedded by a tracker that acts with no credential: its git remotes get none, a run's agent
// reaches nothing of it from a box, and nothing of it is secret.
type NoCredential struct{}

// GitAuth gives no remote anything.
func (NoCredential) GitAuth(string) (user, secret string, ok bool) { return "", "", false }

// Secret is none.
func (NoCredential) Secret() string { return "" }

// Endpoints are none.
func (NoCredential) Endpoints() []Endpoint { return nil }
