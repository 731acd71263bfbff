package eval

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Latest is one repository's latest eval: the results ace eval run keeps in the repository's default eval
// directory (beside its default task set; the ones agent.default = "auto" reads), summed up.
type Latest struct {
	Report
	// ScoredAt is when its last result was scored.
	ScoredAt time.Time `json:"scored_at"`
}

// SharedEvals is what listing a fleet's evals asks of its store (pkg/store's): their results, and the names of
// those that have some.
type SharedEvals interface {
	SharedResults
	EvalNames(ctx context.Context) ([]string, error)
}

// LatestResults reads repo's latest eval, in its default directory under root, as ReadEval reads it: a fleet's
// (shared not nil) from its store, whichever host ran it.
func LatestResults(ctx context.Context, root, repo string, shared SharedResults) ([]RunResult, error) {
	return ReadEval(ctx, shared, repo, DirBeside(DefaultTasks(root, repo)))
}

// LatestAll reads the latest eval of every repository that has one — under ace's root, or with a fleet's store
// (shared not nil) in that store, whichever host ran it — in the order of their names (LatestResults); a
// repository without results is left out. A repository whose results cannot be read is left out too, and named in
// the error, so that one bad eval does not hide the others.
func LatestAll(ctx context.Context, root string, shared SharedEvals) ([]Latest, error) {
	repos, err := evalRepos(ctx, root, shared)
	var out []Latest
	errs := []error{err}
	for _, repo := range repos {
		results, err := LatestResults(ctx, root, repo, shared)
		if err != nil {
			errs = append(errs, fmt.Errorf("the eval of %s: %w", repo, err))
			continue
		}
		if len(results) == 0 {
			continue
		}
		l := Latest{Report: Summarize(results)}
		l.Repo = repo // as ace keeps it: the results' own word is the run's, which the eval directory names anyway
		for _, r := range results {
			if r.ScoredAt.After(l.ScoredAt) {
				l.ScoredAt = r.ScoredAt
			}
		}
		out = append(out, l)
	}
	return out, errors.Join(errs...)
}

// evalRepos are the repositories that may have a latest eval, sorted: those with a default eval directory under
// root, and those whose default directory's eval (SharedName) a fleet's store holds results of.
func evalRepos(ctx context.Context, root string, shared SharedEvals) ([]string, error) {
	var repos []string
	var errs []error
	owners, err := os.ReadDir(filepath.Join(root, "eval"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	for _, o := range owners {
		if !o.IsDir() {
			continue
		}
		names, err := os.ReadDir(filepath.Join(root, "eval", o.Name()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, n := range names {
			if n.IsDir() {
				repos = append(repos, o.Name()+"/"+n.Name())
			}
		}
	}
	if shared != nil {
		names, err := shared.EvalNames(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("the fleet's evals: %w", err))
		}
		for _, name := range names {
			repo, ok := strings.CutSuffix(name, ":"+runDir)
			if owner, rest, _ := strings.Cut(repo, "/"); ok && owner != "" && rest != "" && !strings.ContainsAny(rest, "/:") {
				repos = append(repos, repo)
			}
		}
	}
	slices.Sort(repos)
	return slices.Compact(repos), errors.Join(errs...)
}
