package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/aceworks/ace/pkg/service"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// openService assembles ace for a command that works with runs.
func (a *App) openService(ctx context.Context, obs func(workflow.Progress)) (*service.Service, error) {
	return service.Open(ctx, a.serviceOptions(obs))
}

// openWatchingService is openService for commands that watch agents for long (run, poll).
func (a *App) openWatchingService(ctx context.Context, obs func(workflow.Progress)) (*service.Service, error) {
	o := a.serviceOptions(obs)
	o.Watching = true
	return service.Open(ctx, o)
}

func (a *App) serviceOptions(obs func(workflow.Progress)) service.Options {
	return service.Options{
		Config:     a.Config,
		Secrets:    a.Secrets,
		Logger:     a.Logger,
		Executable: executable(),
		Observer:   obs,
	}
}

// executable is the path tmux panes use to run this ace again (the secret-injecting launcher, the demo agent).
// It follows how ace was invoked rather than /proc/self/exe, so that a binary installed under another name, or
// reached through a symlink that selects a command, keeps working.
func executable() string {
	arg0 := os.Args[0]
	if strings.Contains(arg0, string(filepath.Separator)) {
		if p, err := filepath.Abs(arg0); err == nil {
			return p
		}
	} else if p, err := exec.LookPath(arg0); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs
		}
	}
	p, _ := os.Executable()
	return p
}

// openStore opens only the state store: enough for commands that read runs (ls, show) and need no tracker token.
// It is the store the service opens: PostgreSQL when [store] url (or ACE_STORE_URL) names one, else the SQLite
// file under the workspace root.
func (a *App) openStore(ctx context.Context) (*store.Store, error) {
	if err := os.MkdirAll(a.Config.Workspace.Root, 0o700); err != nil {
		return nil, fmt.Errorf("create workspace root: %w", err)
	}
	return store.OpenConfigured(ctx, a.Config.Store.URL, filepath.Join(a.Config.Workspace.Root, "ace.db"))
}

// findRun opens the store and finds the latest run of issue n (in repo when given).
func (a *App) findRun(ctx context.Context, repo string, n int) (*store.Store, *store.Run, error) {
	st, err := a.openStore(ctx)
	if err != nil {
		return nil, nil, err
	}
	r, err := service.FindRunIn(ctx, st, repo, n)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return st, r, nil
}

// issueArg parses the issue number argument of commands like `ace peek N`.
func issueArg(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(s, "#"))
	if err != nil || n <= 0 {
		return 0, flagErrorf("%q is not an issue number", s)
	}
	return n, nil
}
