package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/eval"
	"github.com/aceworks/ace/pkg/procs"
	"github.com/aceworks/ace/pkg/secrets"
	"github.com/aceworks/ace/pkg/service"
	"github.com/aceworks/ace/pkg/workspace"
)

func newCmdEval(app *App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "Measure agents on this repository's own history",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newCmdEvalBuild(app), newCmdEvalRun(app), newCmdEvalReport(app))
	return cmd
}

type evalBuildOptions struct {
	Repo         string
	From         string
	Since        string
	Max          int
	Check        string
	CheckTimeout time.Duration
	Jobs         int
	Out          string
	JSON         bool
	DryRun       bool
}

func newCmdEvalBuild(app *App) *cobra.Command {
	var o evalBuildOptions
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Build a task set from the repository's merged pull requests (or commits) and validate each task",
		Long: `Build finds the merged pull requests that closed an issue and changed both code and tests (with --from
commits, or when no pull request qualifies: the commits that did, their message the task) and makes each a task:
the issue's text, the base commit (the merge's first parent), the code part of the change and its test part. A
task is kept only when its hidden check — the test part applied, then the repository workflow's verify command
or --check run in the working copy — fails at the base and passes with the code part applied, twice each.

Checks run in throwaway working copies made from ace's mirror (never in a checkout of yours), in a box without
network where boxes work ([sandbox] mode), each within the check timeout, --jobs at a time. The kept tasks are
written, whole or not at all, as JSONL (SWE-bench's field names) to --out; every check's output goes beside it
(.log). It prints each candidate as it is decided and a summary: candidates found, kept, dropped by reason, the
time taken.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runEvalBuild(cmd.Context(), app, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.Repo, "repo", "", "repository `owner/name` (default: the only one configured)")
	f.StringVar(&o.From, "from", eval.FromAuto, "where candidates come from: `auto`, prs or commits")
	f.StringVar(&o.Since, "since", "", "leave out what was merged or committed before `DATE` (2006-01-02 or RFC 3339)")
	f.IntVar(&o.Max, "max", 0, "validate at most `N` candidates, newest first (0: all)")
	f.StringVar(&o.Check, "check", "", "the check `command` (split without a shell; default: the repository workflow's verify)")
	f.DurationVar(&o.CheckTimeout, "check-timeout", 0, "time limit of one check (default: eval.check_timeout)")
	f.IntVar(&o.Jobs, "jobs", 0, "candidates checked at once (default: eval.jobs, else poll.max_concurrent)")
	f.StringVar(&o.Out, "out", "", "the task set's `file` (default: <workspace.root>/eval/<owner>/<name>/tasks.jsonl)")
	f.BoolVar(&o.JSON, "json", false, "print the summary as JSON")
	f.BoolVar(&o.DryRun, "dry-run", false, "list the candidates, check none, write nothing")
	return cmd
}

// evalBuildReport is `ace eval build --json`'s output.
type evalBuildReport struct {
	*eval.Summary
	Out     string         `json:"out"`
	Log     string         `json:"log"`
	Kept    int            `json:"kept"`
	Dropped map[string]int `json:"dropped"`
	CPUNs   time.Duration  `json:"cpu_ns"`
}

func runEvalBuild(ctx context.Context, app *App, o evalBuildOptions) error {
	cfg := app.Config
	var since time.Time
	if o.Since != "" {
		var err error
		if since, err = parseDate(o.Since); err != nil {
			return flagErrorf("--since: %v", err)
		}
	}
	var check []string
	if o.Check != "" {
		var err error
		if check, err = secrets.SplitCommand(o.Check); err != nil || len(check) == 0 {
			return flagErrorf("--check %q: %v", o.Check, err)
		}
	}
	if o.Max < 0 || o.Jobs < 0 || o.CheckTimeout < 0 {
		return flagErrorf("--max, --jobs and --check-timeout must not be negative")
	}
	repo, err := service.ConfiguredRepo(cfg, o.Repo)
	if err != nil {
		return &FlagError{err}
	}
	out := o.Out
	if out == "" {
		out = eval.DefaultTasks(cfg.Workspace.Root, repo)
	}
	if out, err = filepath.Abs(out); err != nil {
		return err
	}
	logPath := strings.TrimSuffix(out, ".jsonl") + ".log"
	trk, err := service.NewTracker(ctx, cfg, app.Secrets, app.Logger)
	if err != nil {
		return err
	}
	ws, err := workspace.New(workspace.Options{Root: cfg.Workspace.Root, AuthorName: cfg.Git.AuthorName,
		AuthorEmail: cfg.Git.AuthorEmail, Logger: app.Logger, Auth: trk})
	if err != nil {
		return err
	}
	scratch := filepath.Join(cfg.Workspace.Root, "eval", "tmp")
	for _, d := range []string{scratch, filepath.Dir(out)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	var logW io.Writer = io.Discard
	if !o.DryRun {
		logFile, err := os.Create(logPath)
		if err != nil {
			return fmt.Errorf("the checks' log: %w", err)
		}
		defer logFile.Close()
		logW = logFile
	}
	var onResult func(eval.Result)
	if !o.JSON {
		onResult = func(r eval.Result) { printEvalResult(app.Stdout, r) }
	}
	sum, err := eval.Build(ctx, eval.Options{Repo: repo, Config: cfg, Tracker: trk, Workspaces: ws, From: o.From,
		Since: since, Max: o.Max, DryRun: o.DryRun, Check: check, CheckTimeout: o.CheckTimeout, Jobs: o.Jobs, Scratch: scratch,
		Self: executable(), Log: logW, OnResult: onResult, Logger: app.Logger})
	if errors.Is(err, eval.ErrNoCheck) {
		return &FlagError{err}
	}
	if err != nil {
		return err
	}
	if o.DryRun {
		return printEvalCandidates(app.Stdout, sum, o.JSON)
	}
	if err := eval.WriteTasks(out, sum.Tasks); err != nil {
		return fmt.Errorf("write the task set: %w", err)
	}
	cpu := procs.OwnCPU()
	if sum.Unboxed == "" {
		cpu += sum.CheckCPUNanos // a box's processes never reach ace's rusage; unboxed, they are in it already
	}
	rep := evalBuildReport{Summary: sum, Out: out, Log: logPath, Kept: len(sum.Tasks), Dropped: sum.Dropped(), CPUNs: cpu}
	if o.JSON {
		enc := json.NewEncoder(app.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	printEvalSummary(app.Stdout, rep)
	return nil
}

// printEvalCandidates is --dry-run's output: the candidates found, checked none.
func printEvalCandidates(w io.Writer, sum *eval.Summary, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(sum)
	}
	for _, r := range sum.Results {
		fmt.Fprintf(w, "candidate  %s  %s\n", r.InstanceID, evalWhat(r))
	}
	fmt.Fprintf(w, "\n%s: %d %s seen, %d candidates", sum.Repo, sum.Seen, seenWords(sum.From), sum.Candidates)
	if len(sum.Skipped) > 0 {
		fmt.Fprintf(w, " (the others: %s)", countsLine(sum.Skipped))
	}
	fmt.Fprintln(w, "; none checked (--dry-run)")
	return nil
}

// parseDate reads a day (2006-01-02, UTC) or an RFC 3339 time.
func parseDate(s string) (time.Time, error) {
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither 2006-01-02 nor an RFC 3339 time", s)
	}
	return t, nil
}

// evalWhat names a candidate's source: "PR #12 (closes #11)" or "commit 0123456789ab".
func evalWhat(r eval.Result) string {
	if r.PR == 0 {
		return "commit " + r.Commit[:min(12, len(r.Commit))]
	}
	what := fmt.Sprintf("PR #%d", r.PR)
	if len(r.Issues) > 0 {
		what += " (closes " + joinIssues(r.Issues) + ")"
	}
	return what
}

func seenWords(from string) string {
	if from == eval.FromCommits {
		return "commits"
	}
	return "merged pull requests"
}

func printEvalResult(w io.Writer, r eval.Result) {
	what := evalWhat(r)
	if r.Kept {
		fmt.Fprintf(w, "kept     %s  %s\n", r.InstanceID, what)
		return
	}
	line := fmt.Sprintf("dropped  %s  %s: %s", r.InstanceID, what, r.Reason)
	if r.Detail != "" {
		line += " — " + r.Detail
	}
	fmt.Fprintln(w, line)
}

func joinIssues(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = fmt.Sprintf("#%d", n)
	}
	return strings.Join(parts, ", ")
}

func printEvalSummary(w io.Writer, rep evalBuildReport) {
	s := rep.Summary
	fmt.Fprintf(w, "\n%s: %d %s seen, %d candidates", s.Repo, s.Seen, seenWords(s.From), s.Candidates)
	if len(s.Skipped) > 0 {
		fmt.Fprintf(w, " (the others: %s)", countsLine(s.Skipped))
	}
	fmt.Fprintln(w)
	where := "boxed, no network"
	if s.Unboxed != "" {
		where = "UNBOXED: " + s.Unboxed
	}
	fmt.Fprintf(w, "check: `%s` (%s), %d at a time, %s\n", shortCommand(s.Check), checkFromWords(s.CheckFrom), s.Jobs, where)
	fmt.Fprintf(w, "kept %d, dropped %d", rep.Kept, s.Candidates-rep.Kept)
	if len(rep.Dropped) > 0 {
		fmt.Fprintf(w, " (%s)", countsLine(rep.Dropped))
	}
	fmt.Fprintf(w, "\ntook %s (CPU %s, the checks' %s)\n", s.TookNanos.Round(100*time.Millisecond), rep.CPUNs.Round(100*time.Millisecond),
		s.CheckCPUNanos.Round(100*time.Millisecond))
	fmt.Fprintf(w, "wrote %d tasks to %s (the checks' output: %s)\n", rep.Kept, rep.Out, rep.Log)
}

// shortCommand is a command on one line of at most 100 characters (a verify command may be a whole script).
func shortCommand(argv []string) string {
	s := config.Command(argv).String()
	if i := strings.Index(s, `\n`); i >= 0 || len(s) > 100 {
		if i < 0 || i > 100 {
			i = 100
		}
		s = strings.ToValidUTF8(s[:i], "") + "…"
	}
	return s
}

func checkFromWords(from string) string {
	if from == eval.CheckFromVerify {
		return "the repository workflow's verify"
	}
	return "--check"
}

// countsLine is "a 2, b 1", largest first.
func countsLine(m map[string]int) string {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int {
		if m[a] != m[b] {
			return m[b] - m[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
