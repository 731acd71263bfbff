package service

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/secrets"
	"github.com/aceworks/ace/pkg/store"
)

// ErrAmbiguous says an issue number alone does not name one repository.
var ErrAmbiguous = errors.New("ambiguous repository")

// Repo picks the repository a command means: the flag when given, else the only one configured (github.repos,
// or the local tracker's own repository).
func (s *Service) Repo(ctx context.Context, flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	repos, err := s.Repos(ctx)
	if err != nil {
		return "", err
	}
	switch len(repos) {
	case 0:
		return "", fmt.Errorf("no repository: pass --repo owner/name or set github.repos: %w", ErrAmbiguous)
	case 1:
		return repos[0], nil
	default:
		return "", fmt.Errorf("several repositories configured (%s): pass --repo: %w", strings.Join(repos, ", "), ErrAmbiguous)
	}
}

// repoLister is a tracker that knows its repositories by itself (the local tracker: its folder's one).
type repoLister interface {
	Repos(context.Context) ([]string, error)
}

// Repos are the repositories `ace poll` watches.
func (s *Service) Repos(ctx context.Context) ([]string, error) {
	if lister, ok := s.Tracker.(repoLister); ok && len(s.Config.GitHub.Repos) == 0 {
		return lister.Repos(ctx)
	}
	return s.Config.GitHub.Repos, nil
}

// FindRun returns the latest run of issue n: in repo when given, else in whichever repository has one (an error
// when several do).
func (s *Service) FindRun(ctx context.Context, repo string, n int) (*store.Run, error) {
	return FindRunIn(ctx, s.Store, repo, n)
}

// RunLister is the part of the store FindRunIn reads.
type RunLister interface {
	LatestRun(ctx context.Context, repo string, issue int) (*store.Run, error)
	ListRuns(ctx context.Context, f store.Filter) ([]*store.Run, error)
}

// FindRunIn is FindRun on any store.
func FindRunIn(ctx context.Context, st RunLister, repo string, n int) (*store.Run, error) {
	if repo != "" {
		r, err := st.LatestRun(ctx, repo, n)
		if err != nil {
			return nil, fmt.Errorf("%s#%d: %w", repo, n, err)
		}
		return r, nil
	}
	runs, err := st.ListRuns(ctx, store.Filter{Issue: n})
	if err != nil {
		return nil, err
	}
	var found *store.Run
	for _, r := range runs {
		if found == nil {
			found = r
			continue
		}
		if r.Repo != found.Repo {
			return nil, fmt.Errorf("issue %d has runs in %s and %s: pass --repo: %w", n, found.Repo, r.Repo, ErrAmbiguous)
		}
		if r.Attempt > found.Attempt {
			found = r
		}
	}
	if found == nil {
		return nil, fmt.Errorf("no run for issue %d: %w", n, store.ErrNotFound)
	}
	return found, nil
}

// ConfiguredRepo is Repo without a token: the flag, else github.repos when it names one repository, else the
// repository of a tracker that knows it without secrets (the local tracker's).
func ConfiguredRepo(cfg *config.Config, flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	repos := cfg.GitHub.Repos
	if k, err := trackerOf(cfg); err == nil && len(repos) == 0 {
		// Opened with no secrets at all: a tracker that needs its token (GitHub) does not open, and names none.
		none := secrets.NewResolver(secrets.Options{LookupEnv: func(string) (string, bool) { return "", false }})
		t, err := k.open(context.Background(), k.setup(cfg, none, nil))
		switch {
		case errors.Is(err, secrets.ErrNotFound):
		case err != nil:
			return "", err
		default:
			if lister, ok := t.(repoLister); ok {
				repos, _ = lister.Repos(context.Background())
			}
		}
	}
	switch len(repos) {
	case 0:
		return "", fmt.Errorf("no repository: pass --repo owner/name or set github.repos: %w", ErrAmbiguous)
	case 1:
		return repos[0], nil
	default:
		return "", fmt.Errorf("several repositories configured (%s): pass --repo: %w", strings.Join(repos, ", "), ErrAmbiguous)
	}
}
