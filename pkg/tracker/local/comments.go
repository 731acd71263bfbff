package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/tracker"
)

type commentMeta struct {
	Created time.Time `toml:"created,omitempty" yaml:"created"`
	Updated time.Time `toml:"updated,omitempty" yaml:"updated"`
}

func (t *Tracker) commentDir(n int) string {
	return filepath.Join(t.dir, "issues", strconv.Itoa(n)+".comments")
}

// readComment parses <id>-<author>.md.
func readComment(path string) (tracker.Comment, error) {
	base := strings.TrimSuffix(filepath.Base(path), ".md")
	idText, author, ok := strings.Cut(base, "-")
	id, err := strconv.ParseInt(idText, 10, 64)
	if !ok || err != nil {
		return tracker.Comment{}, fmt.Errorf("%s: comment files are named <id>-<author>.md", path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return tracker.Comment{}, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return tracker.Comment{}, err
	}
	var meta commentMeta
	var body string
	if err := splitFrontMatter(path, data, &meta, &body); err != nil {
		return tracker.Comment{}, err
	}
	if meta.Created.IsZero() {
		meta.Created = fi.ModTime()
	}
	if meta.Updated.IsZero() {
		meta.Updated = meta.Created
	}
	return tracker.Comment{ID: id, Author: author, Body: body, URL: "file://" + path, CreatedAt: meta.Created, UpdatedAt: meta.Updated}, nil
}

func (t *Tracker) Comments(_ context.Context, repo string, number int, since time.Time) ([]tracker.Comment, error) {
	if err := t.check(repo); err != nil {
		return nil, err
	}
	paths, err := filepath.Glob(filepath.Join(t.commentDir(number), "*.md"))
	if err != nil {
		return nil, err
	}
	var out []tracker.Comment
	for _, p := range paths {
		c, err := readComment(p)
		if err != nil {
			return nil, err
		}
		if since.IsZero() || c.UpdatedAt.After(since) {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// AddComment writes a comment as author (people use the file system; tests use this).
func (t *Tracker) AddComment(ctx context.Context, repo string, number int, author, body string) (*tracker.Comment, error) {
	if err := t.check(repo); err != nil {
		return nil, err
	}
	var c tracker.Comment
	err := t.locked(ctx, func() error {
		if _, err := os.Stat(t.issuePath(number)); err != nil {
			return &tracker.Error{Op: "local tracker", Message: fmt.Sprintf("issue %d does not exist", number), Kind: tracker.ErrNotFound}
		}
		id, err := t.nextCommentID()
		if err != nil {
			return err
		}
		now := time.Now().UTC()
		path := filepath.Join(t.commentDir(number), fmt.Sprintf("%d-%s.md", id, author))
		if err := writeComment(path, commentMeta{Created: now, Updated: now}, body); err != nil {
			return err
		}
		c = tracker.Comment{ID: id, Author: author, Body: body, URL: "file://" + path, CreatedAt: now, UpdatedAt: now}
		return nil
	})
	return &c, err
}

func (t *Tracker) CreateComment(ctx context.Context, repo string, number int, body string) (*tracker.Comment, error) {
	return t.AddComment(ctx, repo, number, Self, body)
}

func (t *Tracker) EditComment(ctx context.Context, repo string, id int64, body string) (*tracker.Comment, error) {
	if err := t.check(repo); err != nil {
		return nil, err
	}
	var c tracker.Comment
	err := t.locked(ctx, func() error {
		paths, _ := filepath.Glob(filepath.Join(t.dir, "issues", "*.comments", fmt.Sprintf("%d-*.md", id)))
		if len(paths) == 0 {
			return &tracker.Error{Op: "local tracker", Message: fmt.Sprintf("comment %d does not exist", id), Kind: tracker.ErrNotFound}
		}
		old, err := readComment(paths[0])
		if err != nil {
			return err
		}
		now := time.Now().UTC()
		if err := writeComment(paths[0], commentMeta{Created: old.CreatedAt, Updated: now}, body); err != nil {
			return err
		}
		c = old
		c.Body, c.UpdatedAt = body, now
		return nil
	})
	return &c, err
}

func (t *Tracker) FindComment(ctx context.Context, repo string, number int, marker string) (*tracker.Comment, error) {
	cs, err := t.Comments(ctx, repo, number, time.Time{})
	if err != nil {
		return nil, err
	}
	for _, c := range cs {
		if c.Author == Self && strings.Contains(c.Body, marker) {
			return &c, nil
		}
	}
	return nil, nil
}

func (t *Tracker) nextCommentID() (int64, error) {
	paths, err := filepath.Glob(filepath.Join(t.dir, "issues", "*.comments", "*.md"))
	if err != nil {
		return 0, err
	}
	var max int64
	for _, p := range paths {
		idText, _, _ := strings.Cut(filepath.Base(p), "-")
		if id, err := strconv.ParseInt(idText, 10, 64); err == nil && id > max {
			max = id
		}
	}
	return max + 1, nil
}

func writeComment(path string, meta commentMeta, body string) error {
	return writeFrontMatter(path, meta, body)
}
