package eval

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Why a candidate is dropped.
const (
	// DropFlaky: its check said different things in the two tries at the base, or at the merge.
	DropFlaky = "flaky"
	// DropPassesAtBase: its check passed before the change, so it tests nothing the change did.
	DropPassesAtBase = "passes at base"
	// DropFailsAtMerge: its check failed with the change.
	DropFailsAtMerge = "fails at merge"
	// DropNoApply: its test patch (or its code patch) does not apply to the base, or names a path that must not
	// be written.
	DropNoApply = "patch does not apply"
	// DropTimedOut: a check did not end within the check timeout. At the base too: a check that was cut short did
	// not say that it fails (a loaded machine, a cold build cache), and one that hangs says nothing a test runner's
	// own timeout would not say better.
	DropTimedOut = "timed out"
	// DropError: ace could not check it (git or the box failed); Detail says what.
	DropError = "error"
	// DropNoCheck: the repository's workflow at its base commit has no verify command (or is invalid), and no
	// --check was given: it has no check of its time.
	DropNoCheck = "no check at base"
)

// Each check runs twice at the base (the test patch applied) and twice at the merge (the base with the code
// patch, then the test patch: what an agent's work that equals the change would be scored as). The tries stop at
// the first result that drops the candidate, so a check that passes at the base runs once.
const tries = 2

// validateAll validates the candidates on jobs slots at once, each slot in a directory of its own; results are
// in the candidates' order.
func (b *builder) validateAll(ctx context.Context, cands []*candidate, jobs int) ([]Result, error) {
	scratch, err := os.MkdirTemp(b.o.Scratch, "build-")
	if err != nil {
		return nil, fmt.Errorf("a directory for the checks' working copies: %w", err)
	}
	defer removeTree(scratch)
	results := make([]Result, len(cands))
	next := make(chan int)
	var wg sync.WaitGroup
	for w := range jobs {
		s := &slot{dir: filepath.Join(scratch, fmt.Sprintf("slot-%d", w)), checker: b.checker}
		s.checker.Home = filepath.Join(s.dir, "home")
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				results[i] = b.validate(ctx, s, cands[i])
				if ctx.Err() == nil && b.o.OnResult != nil {
					b.resultMu.Lock()
					b.o.OnResult(results[i])
					b.resultMu.Unlock()
				}
			}
		}()
	}
	for i := range cands {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return results, ctx.Err()
}

// slot is one worker's place: its working copy and its checks' home are made anew for each check, at the same
// paths (a build tool that keys its cache on the directory finds it again).
type slot struct {
	dir     string
	checker Checker
}

// validate checks one candidate twice at the base, where its check must fail, then twice at the merge, where it
// must pass.
func (b *builder) validate(ctx context.Context, s *slot, c *candidate) Result {
	t := &c.task
	r := resultOf(t)
	if c.unsafe != "" {
		r.Reason, r.Detail = DropNoApply, c.unsafe
		return r
	}
	if c.noCheck != "" {
		r.Reason, r.Detail = DropNoCheck, c.noCheck
		return r
	}
	var longest time.Duration
	for _, atMerge := range []bool{false, true} {
		said, where := &r.Base, "at the base"
		if atMerge {
			said, where = &r.Merge, "at the merge"
		}
		for i := range tries {
			o, err := b.try(ctx, s, t, atMerge)
			b.addCPU(o.CPU)
			if err == nil && o.Applied {
				*said = append(*said, word(o))
			}
			if reason, detail := verdict(err, o, atMerge, i == 0, where, *said); reason != "" {
				r.Reason, r.Detail = reason, detail
				return r
			}
			longest = max(longest, o.Took)
		}
	}
	r.Kept = true
	t.CheckSeconds, t.ValidatedAt = longest.Seconds(), time.Now().UTC()
	return r
}

// verdict says why a try drops its candidate ("" when it does not): at the merge the check must pass, at the base
// fail; the first try that says otherwise says why, the second that the check is flaky.
func verdict(err error, o Outcome, atMerge, first bool, where string, said []string) (reason, detail string) {
	var gold *goldError
	switch {
	case errors.As(err, &gold):
		return DropNoApply, "the code patch: " + gold.err.Error()
	case err != nil:
		return DropError, err.Error()
	case !o.Applied:
		return DropNoApply, "the test patch: " + o.Why
	case o.TimedOut:
		return DropTimedOut, fmt.Sprintf("%s, after %s", where, o.Took.Round(time.Second))
	case o.Passed == atMerge:
		return "", ""
	case !first:
		return DropFlaky, where + ": " + strings.Join(said, ", ")
	case atMerge:
		return DropFailsAtMerge, lastLines(o.Output)
	}
	return DropPassesAtBase, lastLines(o.Output)
}

func (b *builder) addCPU(d time.Duration) {
	b.resultMu.Lock()
	defer b.resultMu.Unlock()
	b.checkCPU += d
}

// resultOf is a candidate's result before it is checked.
func resultOf(t *Task) Result {
	return Result{InstanceID: t.InstanceID, Source: t.Source, PR: t.PR, Issues: t.Issues, Commit: t.MergeCommit}
}

// goldError is the code patch failing to apply to a fresh copy of the base.
type goldError struct{ err error }

func (g *goldError) Error() string { return g.err.Error() }

// try runs the task's check once in a fresh copy of the base: with the code patch applied when atMerge.
func (b *builder) try(ctx context.Context, s *slot, t *Task, atMerge bool) (Outcome, error) {
	dir := filepath.Join(s.dir, "work")
	for _, d := range []string{dir, s.checker.Home} {
		if err := removeTree(d); err != nil {
			return Outcome{}, err
		}
	}
	if err := b.o.Workspaces.Detached(ctx, b.repo, t.BaseCommit, dir); err != nil {
		return Outcome{}, err
	}
	if atMerge {
		if err := applyPatch(ctx, dir, t.Patch); err != nil {
			return Outcome{}, &goldError{err}
		}
	}
	return s.checker.Check(ctx, dir, t)
}

// word is a check's result in a word.
func word(o Outcome) string {
	switch {
	case o.Passed:
		return "pass"
	case o.TimedOut:
		return "timeout"
	}
	return "fail"
}

// lastLines is the end of a check's output on one line, for a dropped candidate's detail.
func lastLines(out string) string {
	var keep []string
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i := len(lines) - 1; i >= 0 && len(keep) < 3; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			keep = append([]string{l}, keep...)
		}
	}
	s := strings.Join(keep, " | ")
	if len(s) > 300 {
		s = "…" + strings.ToValidUTF8(s[len(s)-300:], "")
	}
	return s
}

// removeTree removes dir whole, even where a check left directories without write permission (Go's module
// cache makes its files read-only).
func removeTree(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}
