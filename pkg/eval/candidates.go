package eval

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/tracker"
	"github.com/aceworks/ace/pkg/workspace"
)

// Why a merged pull request or a commit is no candidate.
const (
	skipClosesNoIssue = "closed no issue"
	skipNoTests       = "changed no test"
	skipNoCode        = "changed no code"
	skipTooLarge      = "too large"
	skipNotInMirror   = "merge commit not in the mirror"
	skipRoot          = "root commit"
)

// Bounds of one change: a task is one fix, not a vendored dependency or a reformatting of the tree.
const (
	maxFiles      = 500
	maxPatchBytes = 4 << 20
)

// candidate is a change that may become a task: what it would be, and, when it cannot be one whatever its
// checks say, why (a path that must not be written).
type candidate struct {
	task   Task
	unsafe string
	// noCheck says why the task has no check of its base's workflow (DropNoCheck).
	noCheck string
}

// scan collects candidates, newest first, up to o.Max; skipped counts the rest by why.
type scan struct {
	b       *builder
	seen    int
	skipped map[string]int
	out     []*candidate
}

func (s *scan) full() bool { return s.b.o.Max > 0 && len(s.out) >= s.b.o.Max }

func (s *scan) skip(why string) { s.skipped[why]++ }

// fromPRs reads the merged pull requests that closed an issue.
func (s *scan) fromPRs(ctx context.Context, lister tracker.MergedLister) error {
	b := s.b
	prs, err := lister.MergedPRs(ctx, b.repo, b.o.Since)
	if err != nil {
		return fmt.Errorf("list merged pull requests: %w", err)
	}
	for _, pr := range prs {
		if s.full() {
			break
		}
		s.seen++
		if len(pr.Closes) == 0 {
			s.skip(skipClosesNoIssue)
			continue
		}
		if !workspace.IsCommitID(pr.MergeCommit) || !hasCommit(ctx, b.mirror, pr.MergeCommit) {
			s.skip(skipNotInMirror)
			continue
		}
		c, why, err := s.change(ctx, pr.MergeCommit)
		if err != nil {
			return err
		}
		if why != "" {
			s.skip(why)
			continue
		}
		statement, issues, err := s.issues(ctx, pr.Closes)
		if err != nil {
			return err
		}
		if len(issues) == 0 {
			s.skip(skipClosesNoIssue)
			continue
		}
		c.task.InstanceID = instanceID(b.repo, fmt.Sprint(pr.Number))
		c.task.Source, c.task.PR, c.task.URL, c.task.Issues = SourcePR, pr.Number, pr.URL, issues
		c.task.ProblemStatement, c.task.CreatedAt = statement, pr.CreatedAt.UTC()
		if c.task.CreatedAt.IsZero() {
			c.task.CreatedAt = pr.MergedAt.UTC()
		}
		s.out = append(s.out, c)
	}
	return nil
}

// issues is the problem statement of the issues numbers name: each one's title and body; pull requests and
// issues the tracker does not have are left out.
func (s *scan) issues(ctx context.Context, numbers []int) (string, []int, error) {
	b := s.b
	var parts []string
	var kept []int
	for _, n := range numbers {
		iss, err := b.o.Tracker.Issue(ctx, b.repo, n)
		if errors.Is(err, tracker.ErrNotFound) {
			continue
		}
		if err != nil {
			return "", nil, fmt.Errorf("read issue #%d: %w", n, err)
		}
		if iss.IsPR {
			continue
		}
		parts = append(parts, strings.TrimSpace(iss.Title+"\n"+iss.Body))
		kept = append(kept, n)
	}
	return strings.Join(parts, "\n\n"), kept, nil
}

// fromCommits reads the default branch's commits that are not merges, newest first.
func (s *scan) fromCommits(ctx context.Context) error {
	b := s.b
	args := []string{"rev-list", "--no-merges", "--parents"}
	if !b.o.Since.IsZero() {
		args = append(args, "--since="+b.o.Since.UTC().Format(time.RFC3339))
	}
	list, err := gitText(ctx, b.mirror, append(args, "refs/heads/"+b.branch)...)
	if err != nil {
		return fmt.Errorf("list the commits of %s: %w", b.branch, err)
	}
	for _, line := range strings.Split(list, "\n") {
		if s.full() {
			break
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		s.seen++
		if len(f) == 1 {
			s.skip(skipRoot)
			continue
		}
		c, why, err := s.change(ctx, f[0])
		if err != nil {
			return err
		}
		if why != "" {
			s.skip(why)
			continue
		}
		head, err := gitText(ctx, b.mirror, "show", "-s", "--format=%aI%x00%B", f[0])
		if err != nil {
			return err
		}
		date, msg, _ := strings.Cut(head, "\x00")
		c.task.InstanceID = instanceID(b.repo, f[0][:12])
		c.task.Source, c.task.ProblemStatement = SourceCommit, strings.TrimSpace(msg)
		if t, err := time.Parse(time.RFC3339, date); err == nil {
			c.task.CreatedAt = t.UTC()
		}
		s.out = append(s.out, c)
	}
	return nil
}

// change splits commit's change against its first parent into the code patch and the test patch; why says
// what makes it no candidate ("" when it is one).
func (s *scan) change(ctx context.Context, commit string) (c *candidate, why string, err error) {
	b := s.b
	ps, err := parents(ctx, b.mirror, commit)
	if err != nil {
		return nil, "", err
	}
	if len(ps) == 0 {
		return nil, skipRoot, nil
	}
	base := ps[0]
	files, err := changedFiles(ctx, b.mirror, base, commit)
	if err != nil {
		return nil, "", err
	}
	if len(files) > maxFiles {
		return nil, skipTooLarge, nil
	}
	var code, tests []string
	hasCode := false
	for _, f := range files {
		if IsTestPath(f) {
			tests = append(tests, f)
			continue
		}
		code = append(code, f)
		hasCode = hasCode || !isDocPath(f)
	}
	switch {
	case len(tests) == 0:
		return nil, skipNoTests, nil
	case !hasCode:
		return nil, skipNoCode, nil
	}
	c = &candidate{task: Task{Repo: b.repo, BaseCommit: base, MergeCommit: commit, TestFiles: tests}}
	for _, f := range files {
		if err := checkPath(f); err != nil {
			c.unsafe = err.Error()
			return c, "", nil // no patch is made of it: it is dropped as one that does not apply
		}
	}
	if c.task.Patch, err = diffOf(ctx, b.mirror, base, commit, code); err != nil {
		return nil, "", err
	}
	if c.task.TestPatch, err = diffOf(ctx, b.mirror, base, commit, tests); err != nil {
		return nil, "", err
	}
	if len(c.task.Patch) > maxPatchBytes || len(c.task.TestPatch) > maxPatchBytes {
		return nil, skipTooLarge, nil
	}
	return c, "", nil
}

// instanceID names a task as SWE-bench does: owner__name-<pull request number>; a commit's id stands for the
// number of a task from a commit.
func instanceID(repo, n string) string {
	return strings.Replace(repo, "/", "__", 1) + "-" + n
}
