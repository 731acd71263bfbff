package demo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tracker/local"
)

// ciCheck is the name of the demo's one check, as a CI workflow's job would be named.
const ciCheck = "ci"

// ci plays the demo repository's CI and its maintainer: it runs ci.sh on each new head of the pull request's
// branch and records the result as a check run in the local tracker (as GitHub Actions would on GitHub); once
// the check passes, it merges the pull request.
type ci struct {
	dir     string // the demo's directory: checkouts are made under it
	remote  string // the bare remote
	tracker *local.Tracker

	mu      sync.Mutex // the engine's job workers report in turn, not always from the same goroutine
	checked string     // the head ci.sh last ran on
}

// react runs the CI on the pull request's new head, says how it went and, once it passes, merges it.
func (c *ci) react(ctx context.Context, w io.Writer, start time.Time, r *store.Run) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	res, ran, err := c.run(ctx, r.Branch)
	if err != nil || !ran {
		return err
	}
	at := time.Since(start).Seconds()
	if !res.passed {
		fmt.Fprintf(w, "  %5.1fs  CI  check %q failed on %s: %s\n", at, ciCheck, short(res.sha), res.summary)
		return nil
	}
	fmt.Fprintf(w, "  %5.1fs  CI  check %q passed on %s: %s\n", at, ciCheck, short(res.sha), res.summary)
	if err := c.merge(ctx, r.PRNumber, r.BaseBranch, res.sha); err != nil {
		return err
	}
	fmt.Fprintf(w, "  %5.1fs  CI  merged pull request #%d into %s (the demo plays the maintainer)\n",
		time.Since(start).Seconds(), r.PRNumber, r.BaseBranch)
	return nil
}

// result is one CI run.
type result struct {
	sha     string
	passed  bool
	summary string // the output's last line
}

// run runs ci.sh on the head of branch, unless it already ran there (ok false), and records the check.
func (c *ci) run(ctx context.Context, branch string) (res result, ok bool, err error) {
	sha, err := git(ctx, c.remote, "rev-parse", "--verify", "refs/heads/"+branch)
	if err != nil {
		return result{}, false, err
	}
	res.sha = strings.TrimSpace(sha)
	if res.sha == c.checked {
		return result{}, false, nil
	}
	c.checked = res.sha
	checkout, err := os.MkdirTemp(c.dir, "ci-")
	if err != nil {
		return result{}, false, fmt.Errorf("make a checkout for the CI: %w", err)
	}
	defer os.RemoveAll(checkout)
	if _, err := git(ctx, c.dir, "clone", "-q", "--shared", "--no-checkout", c.remote, checkout); err != nil {
		return result{}, false, err
	}
	if _, err := git(ctx, checkout, "checkout", "-q", "--detach", res.sha); err != nil {
		return result{}, false, err
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cctx, "sh", "ci.sh")
	cmd.Dir = checkout
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	runErr := cmd.Run()
	var exit *exec.ExitError
	if runErr != nil && !errors.As(runErr, &exit) {
		return result{}, false, fmt.Errorf("run ci.sh on %s: %w", short(res.sha), runErr)
	}
	res.passed = runErr == nil
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	res.summary = lines[len(lines)-1]
	check := local.Check{Name: ciCheck, Conclusion: "success", Title: "sh ci.sh passed", Summary: res.summary,
		Log: "$ sh ci.sh\n" + out.String()}
	if !res.passed {
		check.Conclusion = "failure"
		check.Title = fmt.Sprintf("sh ci.sh exited %d", exit.ExitCode())
	}
	if err := c.tracker.SetCheck(ctx, Repo, res.sha, check); err != nil {
		return result{}, false, fmt.Errorf("record the CI result: %w", err)
	}
	return res, true, nil
}

// merge merges pull request pr, whose head is sha, into base the way a maintainer would: base moves to sha (a
// fast-forward: nothing else lands on base in the demo), then the tracker records the merge, which closes the
// issue.
func (c *ci) merge(ctx context.Context, pr int, base, sha string) error {
	old, err := git(ctx, c.remote, "rev-parse", "--verify", "refs/heads/"+base)
	if err != nil {
		return err
	}
	if _, err := git(ctx, c.remote, "merge-base", "--is-ancestor", strings.TrimSpace(old), sha); err != nil {
		return fmt.Errorf("merge pull request #%d: %s moved, it cannot be fast-forwarded: %w", pr, base, err)
	}
	if _, err := git(ctx, c.remote, "update-ref", "refs/heads/"+base, sha, strings.TrimSpace(old)); err != nil {
		return err
	}
	if err := c.tracker.MergePR(ctx, Repo, pr); err != nil {
		return fmt.Errorf("merge pull request #%d: %w", pr, err)
	}
	return nil
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}
