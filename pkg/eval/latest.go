package eval

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Latest is one repository's latest eval: the results ace eval run keeps beside the repository's default task
// set (the ones agent.default = "auto" reads), summed up.
type Latest struct {
	Report
	// ScoredAt is when its last result was scored.
	ScoredAt time.Time `json:"scored_at"`
}

// LatestAll reads the latest eval of every repository that has one under ace's root, in the order of their names; a
// repository without results is left out. A repository whose results cannot be read is left out too, and named
// in the error, so that one bad eval does not hide the others.
func LatestAll(root string) ([]Latest, error) {
	owners, err := os.ReadDir(filepath.Join(root, "eval"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Latest
	var errs []error
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
			if !n.IsDir() {
				continue
			}
			repo := o.Name() + "/" + n.Name()
			results, err := ReadResults(DirBeside(DefaultTasks(root, repo)))
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
	}
	return out, errors.Join(errs...)
}
