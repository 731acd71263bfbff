package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/aceworks/ace/pkg/tracker"
)

var _ tracker.PRReader = (*Tracker)(nil)

// Check is a check run on a commit, kept as <dir>/checks/<sha>/<name>.md: front matter with status,
// conclusion, title, summary, text, url and [[annotations]] (path, start_line, end_line, level, title,
// message); the body is the end of its job log. Whoever runs the checks — ace demo's CI, a script, a person —
// writes it, with SetCheck or by hand.
type Check struct {
	Name string `toml:"-" yaml:"-"`
	// Status is "queued", "in_progress" or "completed" ("" counts as completed).
	Status string `toml:"status,omitempty" yaml:"status"`
	// Conclusion is "success", "failure", "timed_out", "cancelled", "neutral", "skipped", … as on GitHub.
	Conclusion  string       `toml:"conclusion,omitempty" yaml:"conclusion"`
	Title       string       `toml:"title,omitempty" yaml:"title"`
	Summary     string       `toml:"summary,omitempty" yaml:"summary"`
	Text        string       `toml:"text,omitempty" yaml:"text"`
	URL         string       `toml:"url,omitempty" yaml:"url"`
	Annotations []Annotation `toml:"annotations,omitempty" yaml:"annotations"`
	// Log is the end of the check's job log (the file's body).
	Log string `toml:"-" yaml:"-"`
}

// Annotation is a check's note on a line of a file.
type Annotation struct {
	Path      string `toml:"path" yaml:"path"`
	StartLine int    `toml:"start_line" yaml:"start_line"`
	EndLine   int    `toml:"end_line,omitempty" yaml:"end_line"`
	Level     string `toml:"level,omitempty" yaml:"level"` // notice, warning, failure
	Title     string `toml:"title,omitempty" yaml:"title"`
	Message   string `toml:"message" yaml:"message"`
}

// checkName is what a check's name may be: it is a file name.
var checkName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._ -]*$`)

func (t *Tracker) checkDir(sha string) string { return filepath.Join(t.dir, "checks", sha) }

// SetCheck records check c on commit sha, replacing an earlier one of the same name.
func (t *Tracker) SetCheck(ctx context.Context, repo, sha string, c Check) error {
	if err := t.check(repo); err != nil {
		return err
	}
	if !checkName.MatchString(c.Name) || strings.HasSuffix(c.Name, ".md") {
		return &tracker.Error{Op: "local tracker", Message: fmt.Sprintf("check name %q: letters, digits, space, . _ - only", c.Name), Kind: tracker.ErrValidation}
	}
	if !isSHA(sha) {
		return &tracker.Error{Op: "local tracker", Message: fmt.Sprintf("%q is not a commit SHA", sha), Kind: tracker.ErrValidation}
	}
	return t.locked(ctx, func() error {
		return writeFrontMatter(filepath.Join(t.checkDir(sha), c.Name+".md"), c, c.Log)
	})
}

// checks reads the checks recorded on sha, by name.
func (t *Tracker) checks(sha string) ([]Check, error) {
	paths, err := filepath.Glob(filepath.Join(t.checkDir(sha), "*.md"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var out []Check
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var c Check
		if err := splitFrontMatter(p, data, &c, &c.Log); err != nil {
			return nil, err
		}
		c.Name = strings.TrimSuffix(filepath.Base(p), ".md")
		out = append(out, c)
	}
	return out, nil
}

// PRState reads pull request number: its state from pulls/<n>.md, its head commit from the remote (git
// ls-remote), and the checks recorded on that commit. The folder keeps no reviews, review comments or
// conversation, and cannot tell a conflict: those stay empty.
func (t *Tracker) PRState(ctx context.Context, repo string, number int) (*tracker.PRState, error) {
	if err := t.check(repo); err != nil {
		return nil, err
	}
	prs, err := t.pulls()
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(prs, func(p pull) bool { return p.Number == number })
	if i < 0 {
		return nil, &tracker.Error{Op: "local tracker", Message: fmt.Sprintf("pull request %d does not exist", number), Kind: tracker.ErrNotFound}
	}
	pr := prs[i]
	st := &tracker.PRState{Number: number, URL: pr.URL, State: pr.State, Merged: pr.Merged, HeadRef: pr.Head, Base: pr.Base}
	if st.State == "" {
		st.State = "open"
	}
	if st.State == "closed" {
		return st, nil // nothing more matters once it is merged or closed
	}
	if st.HeadSHA, err = t.headSHA(ctx, pr.Head); err != nil {
		return nil, err
	}
	if st.HeadSHA == "" {
		return st, nil // the branch is gone from the remote: no commit to have checks
	}
	checks, err := t.checks(st.HeadSHA)
	if err != nil {
		return nil, err
	}
	for _, c := range checks {
		if c.Status != "" && c.Status != "completed" {
			st.Pending = true
			continue
		}
		if !tracker.CheckFailed(c.Conclusion) {
			continue
		}
		fc := tracker.FailedCheck{Name: c.Name, Conclusion: c.Conclusion, Title: c.Title, Summary: c.Summary, Text: c.Text,
			LogTail: c.Log, URL: c.URL}
		for _, a := range c.Annotations {
			fc.Annotations = append(fc.Annotations, tracker.Annotation(a))
		}
		st.FailedChecks = append(st.FailedChecks, fc)
	}
	return st, nil
}

// headSHA asks the remote for branch's commit ("" when the branch is not there).
func (t *Tracker) headSHA(ctx context.Context, branch string) (string, error) {
	if t.repo.Remote == "" || branch == "" {
		return "", nil
	}
	cmd := exec.CommandContext(ctx, "git", "ls-remote", "--", t.repo.Remote, "refs/heads/"+branch)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0") // a remote asking for credentials fails, never waits
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("local tracker: git ls-remote %s: %w: %s", t.repo.Remote, err, strings.TrimSpace(stderr.String()))
	}
	sha, _, _ := strings.Cut(string(out), "\t")
	return strings.TrimSpace(sha), nil
}

// MergePR records pull request number as merged (state closed, merged true) and closes the issues its body
// closes ("Closes #N"), as a merge on GitHub does. It does not touch the remote: whoever merges moves the base
// branch.
func (t *Tracker) MergePR(ctx context.Context, repo string, number int) error {
	if err := t.check(repo); err != nil {
		return err
	}
	var body string
	err := t.locked(ctx, func() error {
		path := filepath.Join(t.dir, "pulls", strconv.Itoa(number)+".md")
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			return &tracker.Error{Op: "local tracker", Message: fmt.Sprintf("pull request %d does not exist", number), Kind: tracker.ErrNotFound}
		}
		if err != nil {
			return err
		}
		var m pullMeta
		if err := splitFrontMatter(path, data, &m, &body); err != nil {
			return err
		}
		if m.State == "closed" && !m.Merged {
			return &tracker.Error{Op: "local tracker", Message: fmt.Sprintf("pull request %d is closed", number), Kind: tracker.ErrValidation}
		}
		m.State, m.Merged = "closed", true
		return writePull(path, m, body)
	})
	if err != nil {
		return err
	}
	for _, n := range tracker.ClosingIssues(repo, body) {
		if err := t.SetState(ctx, repo, n, "closed"); err != nil && !errors.Is(err, tracker.ErrNotFound) {
			return fmt.Errorf("close issue %d merged by pull request %d: %w", n, number, err)
		}
	}
	return nil
}

func isSHA(s string) bool {
	if len(s) < 7 || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
