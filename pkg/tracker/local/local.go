// Package local is a tracker kept in a folder of Markdown files — ace's offline default (ace demo, use without
// GitHub). Easy to read and to edit by hand:
//
//	<dir>/repo.toml                     name = "owner/repo", remote = "<git URL or path>", default_branch = "main",
//	                                    [permissions] user = "read" (anyone not listed: admin — whoever can
//	                                    write these files controls ace anyway)
//	<dir>/issues/<n>.md                 front matter (TOML between +++ lines, or YAML between ---) with title,
//	                                    labels, state, author, created, labeled_by; then the Markdown body
//	<dir>/issues/<n>.comments/<id>-<author>.md   one comment each; optional front matter created, updated
//	<dir>/pulls/<n>.md                  pull requests ace opened: front matter title, head, base, draft, state, url;
//	                                    merged = true with state = "closed" once merged (MergePR, or by hand);
//	                                    merge_commit (and merged_at), written by whoever merged, make it a
//	                                    source of tasks for ace eval build (MergedPRs)
//	<dir>/checks/<sha>/<name>.md        a check run on a commit (Check): front matter status, conclusion, title,
//	                                    summary, text, url, [[annotations]]; the body is its job log's end
//
// ace follows the pull requests it opened here as it does on GitHub (PRState): the head commit is read from the
// remote, failed checks on it go back to the agent, and a merge ends the run. Reviews and pull request comments
// are not kept in the folder.
//
// Relative remote paths are resolved against <dir>. Writes are atomic (temporary file + rename) and serialized by
// a lock on <dir>/.lock, so `ace poll` and `ace run` never lose each other's labels or comments. Issue files ace
// changes (labels, state) are written back with TOML front matter.
package local

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/gofrs/flock"

	"github.com/aceworks/ace/pkg/tracker"
)

// Self is the login ace writes as.
const Self = "ace"

// Tracker is the folder tracker. It acts with no credential: its remote is a path or a URL of the user's.
type Tracker struct {
	tracker.NoCredential
	dir  string
	repo repoFile
	// mu serializes this process's writers; lock (a file lock) serializes processes. A flock alone would let
	// goroutines of one process in together.
	mu   sync.Mutex
	lock *flock.Flock
}

type repoFile struct {
	Name          string            `toml:"name"`
	Remote        string            `toml:"remote"`
	DefaultBranch string            `toml:"default_branch"`
	Permissions   map[string]string `toml:"permissions"`
}

// Open is the local tracker of the configuration: the folder tracker.path.
func Open(_ context.Context, s tracker.Setup) (*Tracker, error) {
	path := s.Path
	if path == "" {
		return nil, fmt.Errorf("tracker.path: empty (the local tracker needs the folder that holds issues/)")
	}
	t, err := New(filepath.Clean(path))
	if err != nil {
		return nil, fmt.Errorf("local tracker at %s: %w", path, err)
	}
	return t, nil
}

// Doctor is `ace doctor`'s look at the tracker: the folder it names.
func Doctor(_ context.Context, s tracker.Setup) (string, error) {
	return "local: " + s.Path, nil
}

// New opens the tracker folder dir (it must hold repo.toml).
func New(dir string) (*Tracker, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	var rf repoFile
	md, err := toml.DecodeFile(filepath.Join(abs, "repo.toml"), &rf)
	if err != nil {
		return nil, fmt.Errorf("local tracker: %w", err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return nil, fmt.Errorf("local tracker: %s: unknown key %s", filepath.Join(abs, "repo.toml"), und[0])
	}
	if _, _, err := tracker.SplitRepo(rf.Name); err != nil {
		return nil, fmt.Errorf("local tracker: repo.toml name: %w", err)
	}
	if rf.DefaultBranch == "" {
		rf.DefaultBranch = "main"
	}
	if rf.Remote != "" && !strings.Contains(rf.Remote, "://") && !filepath.IsAbs(rf.Remote) {
		rf.Remote = filepath.Join(abs, rf.Remote)
	}
	return &Tracker{dir: abs, repo: rf, lock: flock.New(filepath.Join(abs, ".lock"))}, nil
}

// Repos lists the one repository this folder tracks.
func (t *Tracker) Repos(context.Context) ([]string, error) { return []string{t.repo.Name}, nil }

func (t *Tracker) check(repo string) error {
	if repo != t.repo.Name {
		return &tracker.Error{Op: "local tracker", Message: fmt.Sprintf("repository %s is not tracked here (%s is)", repo, t.repo.Name), Kind: tracker.ErrNotFound}
	}
	return nil
}

// locked runs fn under the folder's lock.
func (t *Tracker) locked(ctx context.Context, fn func() error) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	ok, err := t.lock.TryLockContext(ctx, 20*time.Millisecond)
	if err != nil || !ok {
		return fmt.Errorf("lock %s: %w", t.lock.Path(), errors.Join(err, ctx.Err()))
	}
	defer t.lock.Unlock()
	return fn()
}

func (t *Tracker) issuePath(n int) string {
	return filepath.Join(t.dir, "issues", strconv.Itoa(n)+".md")
}

func (t *Tracker) Issue(_ context.Context, repo string, number int) (*tracker.Issue, error) {
	if err := t.check(repo); err != nil {
		return nil, err
	}
	f, err := readIssue(t.issuePath(number))
	if err != nil {
		return nil, err
	}
	return t.toIssue(number, f), nil
}

func (t *Tracker) toIssue(n int, f *issueFile) *tracker.Issue {
	state := f.Meta.State
	if state == "" {
		state = "open"
	}
	created := f.Meta.Created
	if created.IsZero() {
		created = f.ModTime
	}
	return &tracker.Issue{
		Repo: t.repo.Name, Number: n, Title: f.Meta.Title, Body: f.Body, Author: f.Meta.Author,
		URL: "file://" + t.issuePath(n), State: state, Labels: append([]string(nil), f.Meta.Labels...),
		CreatedAt: created, UpdatedAt: f.ModTime,
	}
}

func (t *Tracker) ListLabeled(_ context.Context, repo, label string) ([]tracker.Issue, error) {
	if err := t.check(repo); err != nil {
		return nil, err
	}
	paths, err := filepath.Glob(filepath.Join(t.dir, "issues", "*.md"))
	if err != nil {
		return nil, err
	}
	var out []tracker.Issue
	var errs []error
	for _, p := range paths {
		n, err := strconv.Atoi(strings.TrimSuffix(filepath.Base(p), ".md"))
		if err != nil {
			continue
		}
		f, err := readIssue(p)
		if err != nil {
			errs = append(errs, err) // a broken file must not hide the others
			continue
		}
		iss := t.toIssue(n, f)
		if iss.State == "open" && slices.Contains(iss.Labels, label) {
			out = append(out, *iss)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].Number < out[j].Number
	})
	return out, errors.Join(errs...)
}

func (t *Tracker) AddLabels(ctx context.Context, repo string, number int, labels ...string) error {
	return t.editIssue(ctx, repo, number, func(m *issueMeta) {
		for _, l := range labels {
			if !slices.Contains(m.Labels, l) {
				m.Labels = append(m.Labels, l)
			}
		}
	})
}

func (t *Tracker) RemoveLabel(ctx context.Context, repo string, number int, label string) error {
	return t.editIssue(ctx, repo, number, func(m *issueMeta) {
		var keep []string
		for _, l := range m.Labels {
			if l != label {
				keep = append(keep, l)
			}
		}
		m.Labels = keep
	})
}

// SetState opens or closes an issue (for people and tests; ace itself never closes issues).
func (t *Tracker) SetState(ctx context.Context, repo string, number int, state string) error {
	return t.editIssue(ctx, repo, number, func(m *issueMeta) { m.State = state })
}

func (t *Tracker) editIssue(ctx context.Context, repo string, number int, fn func(*issueMeta)) error {
	if err := t.check(repo); err != nil {
		return err
	}
	return t.locked(ctx, func() error {
		f, err := readIssue(t.issuePath(number))
		if err != nil {
			return err
		}
		fn(&f.Meta)
		return writeIssue(t.issuePath(number), f)
	})
}

func (t *Tracker) Labeler(_ context.Context, repo string, number int, label string) (string, error) {
	if err := t.check(repo); err != nil {
		return "", err
	}
	f, err := readIssue(t.issuePath(number))
	if err != nil {
		return "", err
	}
	if !slices.Contains(f.Meta.Labels, label) {
		return "", nil
	}
	if f.Meta.LabeledBy != "" {
		return f.Meta.LabeledBy, nil
	}
	return f.Meta.Author, nil
}

func (t *Tracker) Permission(_ context.Context, repo, user string) (tracker.Permission, error) {
	if err := t.check(repo); err != nil {
		return "", err
	}
	if p, ok := t.repo.Permissions[user]; ok {
		return tracker.Permission(p), nil
	}
	return tracker.PermAdmin, nil
}

func (t *Tracker) Repo(_ context.Context, repo string) (*tracker.Repo, error) {
	if err := t.check(repo); err != nil {
		return nil, err
	}
	if t.repo.Remote == "" {
		return nil, &tracker.Error{Op: "local tracker", Message: "repo.toml has no remote", Kind: tracker.ErrValidation}
	}
	return &tracker.Repo{FullName: t.repo.Name, DefaultBranch: t.repo.DefaultBranch, CloneURL: t.repo.Remote}, nil
}

func (t *Tracker) Self(context.Context) (string, error) { return Self, nil }
