package tracker

import (
	"context"
	"log/slog"
)

// Setup is what a tracker is opened with: the settings of ace.toml a tracker reads (each its own), the secrets
// its credential is looked up in, and the log.
type Setup struct {
	// Path is the folder of a tracker kept in files (tracker.path).
	Path string
	// APIURL is the tracker's API ("" for its own default; github.api_url).
	APIURL string
	// TokenEnv are the secrets its token may be under, tried in order (github.token_env).
	TokenEnv []string
	// CacheDir is where it may keep what it caches across processes (<workspace.root>/cache/<tracker.kind>).
	CacheDir string
	Secrets  Secrets
	Logger   *slog.Logger
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
