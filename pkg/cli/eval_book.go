package cli

import (
	"context"
	"os"

	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/eval"
	"github.com/aceworks/ace/pkg/store"
)

// evalBook is where ace eval run keeps the eval of repo in dir, and where ace eval report reads it: with the
// store on PostgreSQL ([store] url, a fleet), the shared store, under the repository and the directory's name, so
// that the hosts running that eval split its items and each reports them all; else (nil) the directory's own
// files. close closes the store.
func evalBook(ctx context.Context, cfg *config.Config, repo, dir string, app *App) (book *eval.SharedBook, closeFn func(), err error) {
	if cfg.Store.URL == "" {
		return nil, func() {}, nil
	}
	st, err := store.OpenConfigured(ctx, cfg.Store.URL, "")
	if err != nil {
		return nil, nil, err
	}
	host := cfg.Host.Name
	if host == "" {
		host, _ = os.Hostname()
	}
	return &eval.SharedBook{Store: st, Name: eval.SharedName(repo, dir), Host: host, Lease: cfg.Host.DeadAfter.Duration,
		Logger: app.Logger}, func() { st.Close() }, nil
}
