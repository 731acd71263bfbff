// Package eval measures agents on a repository's own history. This part builds the task set (ace eval build):
// merged pull requests that closed an issue and changed both code and tests — or, for a repository without that
// habit, commits that did — each kept only when its hidden check (the change's tests applied, the repository's
// verify command or --check run in a box) fails before the change and passes after it, twice each. The set is
// a JSONL file whose fields are SWE-bench's where they mean the same (task.go).
package eval

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/tracker"
	"github.com/aceworks/ace/pkg/workspace"
)

// Where candidates come from (ace eval build --from).
const (
	// FromAuto takes merged pull requests where the tracker lists them and one of them is a candidate, else
	// commits.
	FromAuto    = "auto"
	FromPRs     = "prs"
	FromCommits = "commits"
)

// DefaultCheckTimeout bounds a --check command when neither the flag nor eval.check_timeout does.
const DefaultCheckTimeout = 10 * time.Minute

// ErrNoCheck is Build's error for a repository whose workflow has no verify command when no --check was given.
var ErrNoCheck = errors.New("no check: the repository's workflow has no verify command; pass --check CMD")

// Tracker is what Build reads of the tracker: the repository, and the issues a pull request closed. A tracker
// that is also a tracker.MergedLister gives pull requests.
type Tracker interface {
	Repo(ctx context.Context, repo string) (*tracker.Repo, error)
	Issue(ctx context.Context, repo string, number int) (*tracker.Issue, error)
}

// Workspaces makes the mirror and the throwaway working copies checks run in (workspace.Manager).
type Workspaces interface {
	SyncMirror(ctx context.Context, spec workspace.Spec) (string, error)
	Detached(ctx context.Context, repo, commit, dir string) error
	DepCacheEnv(repo string) ([]string, error)
}

// Options configure Build.
type Options struct {
	Repo       string
	Config     *config.Config // [repos."owner/name"] and the workflow, [sandbox], [eval], [poll]
	Tracker    Tracker
	Workspaces Workspaces
	From       string // FromAuto ("" too), FromPRs or FromCommits
	// Since leaves out what was merged (or committed) before it; Max bounds the candidates, newest first (0: all).
	Since time.Time
	Max   int
	// DryRun finds the candidates and checks none: Summary.Results lists them, neither kept nor dropped.
	DryRun bool
	// Check replaces the workflow's verify command; CheckTimeout and Jobs, when positive, [eval]'s keys.
	Check        []string
	CheckTimeout time.Duration
	Jobs         int
	// Scratch is the directory under which the build makes (and removes) the working copies of its checks.
	Scratch string
	// Self is ace's executable, the first process of each box ("" is os.Executable()).
	Self string
	// Log gets every check command's output; nil drops it.
	Log io.Writer
	// OnResult hears each candidate's result as soon as it is decided, one call at a time.
	OnResult func(Result)
	Logger   *slog.Logger
}

// Result is what became of one candidate.
type Result struct {
	InstanceID string `json:"instance_id"`
	Source     string `json:"source"`
	PR         int    `json:"pr,omitempty"`
	Issues     []int  `json:"issues,omitempty"`
	Commit     string `json:"commit"`
	Kept       bool   `json:"kept"`
	// Reason (one of the Drop… reasons) and Detail say why a candidate was dropped.
	Reason string `json:"reason,omitempty"`
	Detail string `json:"detail,omitempty"`
	// Base and Merge are the checks' results in order: "pass", "fail" or "timeout".
	Base  []string `json:"base,omitempty"`
	Merge []string `json:"merge,omitempty"`
}

// Summary is a build's account: where its candidates came from and what became of each.
type Summary struct {
	Repo      string   `json:"repo"`
	From      string   `json:"from"` // FromPRs or FromCommits
	Check     []string `json:"check"`
	CheckFrom string   `json:"check_from"`
	// Unboxed says why checks ran outside a box ("" when they were boxed).
	Unboxed string `json:"unboxed,omitempty"`
	Jobs    int    `json:"jobs"`
	// Seen counts the merged pull requests or commits looked at; Skipped those that were no candidate, by why.
	Seen       int            `json:"seen"`
	Skipped    map[string]int `json:"skipped"`
	Candidates int            `json:"candidates"`
	Results    []Result       `json:"results"`
	Tasks      []Task         `json:"-"`
	TookNanos  time.Duration  `json:"took_ns"`
	// CheckCPUNanos is the CPU the checks' processes used, as their shells counted it (Outcome.CPU).
	CheckCPUNanos time.Duration `json:"check_cpu_ns"`
}

// Dropped counts the dropped candidates by reason.
func (s *Summary) Dropped() map[string]int {
	out := map[string]int{}
	for _, r := range s.Results {
		if !r.Kept {
			out[r.Reason]++
		}
	}
	return out
}

// builder is one Build.
type builder struct {
	o       Options
	repo    string
	branch  string
	mirror  string
	checker Checker // each slot's is a copy with a home of its own
	// The check as the default branch's head has it (the summary's); each task's is its base's (setChecks).
	check     []string
	checkFrom string
	jobs      int
	resultMu  sync.Mutex // OnResult's calls and checkCPU
	checkCPU  time.Duration
}

// Build finds the candidates and validates them; the kept ones are Summary.Tasks, in the order found (newest
// first). Nothing is written: the caller writes the set (WriteTasks).
func Build(ctx context.Context, o Options) (*Summary, error) {
	start := time.Now()
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	b := &builder{o: o, repo: o.Repo}
	info, err := o.Tracker.Repo(ctx, o.Repo)
	if err != nil {
		return nil, fmt.Errorf("read repository %s: %w", o.Repo, err)
	}
	b.branch = info.DefaultBranch
	if b.mirror, err = o.Workspaces.SyncMirror(ctx, workspace.Spec{Repo: o.Repo, RemoteURL: info.CloneURL}); err != nil {
		return nil, err
	}
	if err := b.resolveCheck(ctx); err != nil {
		return nil, err
	}
	sum := &Summary{Repo: o.Repo, Check: b.check, CheckFrom: b.checkFrom, Skipped: map[string]int{}}
	if err := b.box(ctx, sum); err != nil {
		return nil, err
	}
	cands, err := b.candidates(ctx, sum)
	if err != nil {
		return nil, err
	}
	sum.Candidates = len(cands)
	sum.Jobs = min(b.jobs, max(len(cands), 1))
	if err := b.setChecks(ctx, cands); err != nil {
		return nil, err
	}
	if o.DryRun {
		for _, c := range cands {
			sum.Results = append(sum.Results, resultOf(&c.task))
		}
		sum.TookNanos = time.Since(start)
		return sum, nil
	}
	results, err := b.validateAll(ctx, cands, sum.Jobs)
	if err != nil {
		return nil, err
	}
	sum.Results = results
	for i, r := range results {
		if r.Kept {
			sum.Tasks = append(sum.Tasks, cands[i].task)
		}
	}
	sum.TookNanos, sum.CheckCPUNanos = time.Since(start), b.checkCPU
	return sum, nil
}

// checkSpec is the check a task gets: --check, else the repository workflow's verify command with its setup
// commands and env, and the timeout.
type checkSpec struct {
	check   []string
	from    string
	setup   [][]string
	env     map[string]string
	timeout time.Duration
}

// resolveCheck decides the build's check as the head of the default branch has it (what the summary reports, and
// ErrNoCheck when there is none) and the jobs; each task's is its base's (checkAt), set in Build.
func (b *builder) resolveCheck(ctx context.Context) error {
	head, err := gitText(ctx, b.mirror, "rev-parse", "--verify", "-q", "refs/heads/"+b.branch+"^{commit}")
	if err != nil {
		return fmt.Errorf("find %s in the mirror: %w", b.branch, err)
	}
	spec, err := b.checkAt(ctx, head)
	if err != nil {
		return err
	}
	b.check, b.checkFrom = spec.check, spec.from
	cfg := b.o.Config
	b.jobs = int(firstPositive(time.Duration(b.o.Jobs), time.Duration(cfg.Eval.Jobs), time.Duration(cfg.Poll.MaxConcurrent), 1))
	return nil
}

// checkAt is the check of a task whose base is rev: --check, else the verify command of the repository's
// workflow file at rev (read from the mirror, under ace.toml's [repos."owner/name"]) with its setup commands and
// env — the file as the repository had it then, never a later one (a task must not be checked, nor its agent
// set up, by what came after it). The workflow's env files are not written: no secret reaches a check.
func (b *builder) checkAt(ctx context.Context, rev string) (checkSpec, error) {
	cfg := b.o.Config
	data, found, err := readAt(ctx, b.mirror, rev, config.WorkflowFile)
	if err != nil {
		return checkSpec{}, err
	}
	var file *config.RepoWorkflow
	if found {
		if file, err = config.ParseWorkflow(config.WorkflowFile, data); err != nil {
			return checkSpec{}, fmt.Errorf("the repository's workflow is invalid: %w", err)
		}
	}
	wf, err := cfg.Workflow(b.repo, file)
	if err != nil {
		return checkSpec{}, fmt.Errorf("the repository's workflow is invalid: %w", err)
	}
	var spec checkSpec
	timeout := DefaultCheckTimeout
	switch {
	case len(b.o.Check) > 0:
		spec.check, spec.from = b.o.Check, CheckFromFlag
	case len(wf.Verify) > 0:
		spec.check, spec.from, spec.env = wf.Verify, CheckFromVerify, wf.Env
		for _, s := range wf.Setup {
			spec.setup = append(spec.setup, s)
		}
		timeout = wf.VerifyTimeout.Duration
	default:
		return checkSpec{}, ErrNoCheck
	}
	spec.timeout = firstPositive(b.o.CheckTimeout, cfg.Eval.CheckTimeout.Duration, timeout)
	return spec, nil
}

// setChecks gives each candidate the check of its base's workflow; one whose base has none (or an invalid one)
// is dropped as DropNoCheck.
func (b *builder) setChecks(ctx context.Context, cands []*candidate) error {
	at := map[string]checkSpec{}
	why := map[string]string{}
	for _, c := range cands {
		t := &c.task
		spec, ok := at[t.BaseCommit]
		if !ok && why[t.BaseCommit] == "" {
			var err error
			spec, err = b.checkAt(ctx, t.BaseCommit)
			switch {
			case ctx.Err() != nil:
				return ctx.Err()
			case err != nil:
				why[t.BaseCommit] = err.Error()
			default:
				at[t.BaseCommit], ok = spec, true
			}
		}
		if !ok {
			c.noCheck = why[t.BaseCommit]
			continue
		}
		t.Check, t.CheckFrom, t.Setup, t.CheckEnv = spec.check, spec.from, spec.setup, spec.env
		t.CheckTimeoutSeconds = spec.timeout.Seconds()
	}
	return nil
}

func firstPositive(ds ...time.Duration) time.Duration {
	for _, d := range ds {
		if d > 0 {
			return d
		}
	}
	return 0
}

// box makes the build's checker (CheckerFor) and says in the summary why its checks run unboxed, if they do.
func (b *builder) box(ctx context.Context, sum *Summary) error {
	caches, err := b.o.Workspaces.DepCacheEnv(b.repo)
	if err != nil {
		return err
	}
	c, unboxed, err := CheckerFor(ctx, b.o.Config, b.repo, b.mirror, caches, b.o.Self)
	if err != nil {
		return err
	}
	if unboxed != "" {
		b.o.Logger.WarnContext(ctx, "checks run unboxed", "why", unboxed)
	}
	c.Log, c.LogMu = b.o.Log, &sync.Mutex{}
	b.checker, sum.Unboxed = c, unboxed
	return nil
}

// candidates lists them from the source --from names.
func (b *builder) candidates(ctx context.Context, sum *Summary) ([]*candidate, error) {
	from := b.o.From
	switch from {
	case "":
		from = FromAuto
	case FromAuto, FromPRs, FromCommits:
	default:
		return nil, fmt.Errorf("--from %q: want %s, %s or %s", from, FromAuto, FromPRs, FromCommits)
	}
	lister, canList := b.o.Tracker.(tracker.MergedLister)
	if from == FromPRs && !canList {
		return nil, errors.New("this tracker lists no merged pull requests: use --from commits")
	}
	if from == FromPRs || (from == FromAuto && canList) {
		s := &scan{b: b, skipped: map[string]int{}}
		if err := s.fromPRs(ctx, lister); err != nil {
			return nil, err
		}
		if from == FromPRs || len(s.out) > 0 {
			sum.From, sum.Seen, sum.Skipped = FromPRs, s.seen, s.skipped
			return s.out, nil
		}
		b.o.Logger.InfoContext(ctx, "no merged pull request is a candidate: taking commits", "seen", s.seen)
	}
	s := &scan{b: b, skipped: map[string]int{}}
	if err := s.fromCommits(ctx); err != nil {
		return nil, err
	}
	sum.From, sum.Seen, sum.Skipped = FromCommits, s.seen, s.skipped
	return s.out, nil
}
