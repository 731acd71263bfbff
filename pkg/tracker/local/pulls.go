package local

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/tracker"
)

type pullMeta struct {
	Title string `toml:"title" yaml:"title"`
	Head  string `toml:"head" yaml:"head"`
	Base  string `toml:"base" yaml:"base"`
	Draft bool   `toml:"draft" yaml:"draft"`
	State string `toml:"state" yaml:"state"`
	// Merged is set with state "closed" when the pull request was merged (MergePR, or by hand).
	Merged bool   `toml:"merged,omitempty" yaml:"merged"`
	URL    string `toml:"url" yaml:"url"`
	// MergeCommit is the commit the merge made on the base branch, written by whoever merged: a merged pull
	// request that names it is a source of tasks (MergedPRs).
	MergeCommit string    `toml:"merge_commit,omitempty" yaml:"merge_commit"`
	MergedAt    time.Time `toml:"merged_at,omitempty" yaml:"merged_at"`
}

// pull is a pull request file read back.
type pull struct {
	tracker.PullRequest
	Merged      bool
	MergeCommit string
	MergedAt    time.Time
}

func (t *Tracker) pulls() ([]pull, error) {
	paths, err := filepath.Glob(filepath.Join(t.dir, "pulls", "*.md"))
	if err != nil {
		return nil, err
	}
	var out []pull
	for _, p := range paths {
		n, err := strconv.Atoi(strings.TrimSuffix(filepath.Base(p), ".md"))
		if err != nil {
			continue
		}
		f, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var m pullMeta
		var body string
		if err := splitFrontMatter(p, f, &m, &body); err != nil {
			return nil, err
		}
		out = append(out, pull{PullRequest: tracker.PullRequest{Number: n, URL: m.URL, State: m.State, Head: m.Head, Base: m.Base,
			Title: m.Title, Body: body, Draft: m.Draft}, Merged: m.Merged, MergeCommit: m.MergeCommit, MergedAt: m.MergedAt})
	}
	return out, nil
}

func (t *Tracker) FindPR(_ context.Context, repo, head string) (*tracker.PullRequest, error) {
	if err := t.check(repo); err != nil {
		return nil, err
	}
	prs, err := t.pulls()
	if err != nil {
		return nil, err
	}
	for _, pr := range prs {
		if pr.Head == head && pr.State == "open" {
			return &pr.PullRequest, nil
		}
	}
	return nil, nil
}

// CreatePR records the pull request as pulls/<n>.md; one already open for the head is returned instead.
func (t *Tracker) CreatePR(ctx context.Context, repo string, pr tracker.NewPR) (*tracker.PullRequest, error) {
	if err := t.check(repo); err != nil {
		return nil, err
	}
	var out *tracker.PullRequest
	err := t.locked(ctx, func() error {
		prs, err := t.pulls()
		if err != nil {
			return err
		}
		n := 1
		for _, p := range prs {
			if p.Head == pr.Head && p.State == "open" {
				out = &p.PullRequest
				return nil
			}
			if p.Number >= n {
				n = p.Number + 1
			}
		}
		path := filepath.Join(t.dir, "pulls", strconv.Itoa(n)+".md")
		m := pullMeta{Title: pr.Title, Head: pr.Head, Base: pr.Base, Draft: pr.Draft, State: "open", URL: "file://" + path}
		if err := writePull(path, m, pr.Body); err != nil {
			return err
		}
		out = &tracker.PullRequest{Number: n, URL: m.URL, State: "open", Head: pr.Head, Base: pr.Base, Title: pr.Title, Body: pr.Body, Draft: pr.Draft}
		return nil
	})
	return out, err
}

func writePull(path string, m pullMeta, body string) error { return writeFrontMatter(path, m, body) }

var _ tracker.MergedLister = (*Tracker)(nil)

// MergedPRs lists the merged pull requests whose file names their merge commit (merge_commit), merged at or after
// since (a file without merged_at counts as merged at the zero time), newest first.
func (t *Tracker) MergedPRs(_ context.Context, repo string, since time.Time) ([]tracker.MergedPR, error) {
	if err := t.check(repo); err != nil {
		return nil, err
	}
	prs, err := t.pulls()
	if err != nil {
		return nil, err
	}
	var out []tracker.MergedPR
	for _, p := range prs {
		if !p.Merged || p.MergeCommit == "" || (!since.IsZero() && p.MergedAt.Before(since)) {
			continue
		}
		out = append(out, tracker.MergedPR{Number: p.Number, URL: p.URL, Title: p.Title, Body: p.Body, Base: p.Base,
			MergeCommit: p.MergeCommit, MergedAt: p.MergedAt, Closes: tracker.ClosingIssues(repo, p.Title+"\n"+p.Body)})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].MergedAt.Equal(out[j].MergedAt) {
			return out[i].MergedAt.After(out[j].MergedAt)
		}
		return out[i].Number > out[j].Number
	})
	return out, nil
}
