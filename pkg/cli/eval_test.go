package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/evaltest"
	"github.com/aceworks/ace/internal/gittest"
	"github.com/aceworks/ace/pkg/eval"
)

// aceEval runs `ace --config <cfg> eval build args…` as a user would (the test binary is ace on PATH) and
// returns its standard output.
func aceEval(t *testing.T, dir, cfg string, args ...string) string {
	t.Helper()
	path := filepath.Join(dir, "ace.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ace", append([]string{"--config", path, "eval", "build"}, args...)...)
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(os.Environ(), "HOME="+home, "EVAL_TOKEN="+evaltest.Token, "NO_COLOR=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ace eval build %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

type buildReport struct {
	eval.Summary
	Out     string         `json:"out"`
	Log     string         `json:"log"`
	Kept    int            `json:"kept"`
	Dropped map[string]int `json:"dropped"`
}

// TestEvalBuildKeepsTheValidPullRequests: from a history of merged pull requests (the fake GitHub serving them
// and their issues, the git remote over smart HTTP), ace eval build keeps exactly the pull requests whose check
// fails before them and passes with them, twice; it drops the flaky one, the one whose test passes before its
// fix, the one whose test fails with it and the one whose tree reaches into .git, each for its reason; it skips
// the pull requests without tests or without an issue and never sees the commits pushed without a pull request.
// The tasks carry the issues' text as it was written; the check that tries to write a file of the host cannot.
func TestEvalBuildKeepsTheValidPullRequests(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w := evaltest.New(t, dir)
	out := filepath.Join(dir, "tasks.jsonl")
	cfg := fmt.Sprintf("[workspace]\nroot = %q\n[github]\napi_url = %q\ntoken_env = [\"EVAL_TOKEN\"]\nrepos = [%q]\n[poll]\nmax_concurrent = 3\n",
		filepath.Join(dir, "root"), w.GH.URL(), evaltest.Repo)
	var rep buildReport
	if err := json.Unmarshal([]byte(aceEval(t, dir, cfg, "--json", "--out", out)), &rep); err != nil {
		t.Fatal(err)
	}

	t.Logf("built in %s", rep.TookNanos)
	if rep.From != eval.FromPRs || rep.Seen != len(w.PRs) || rep.CheckFrom != eval.CheckFromVerify ||
		!slices.Equal(rep.Check, []string{"sh", "run-tests.sh"}) || rep.Jobs != 3 {
		t.Fatalf("from %s, %d seen, check %v from %s, %d jobs; want prs, %d, the workflow's verify, 3", rep.From, rep.Seen,
			rep.Check, rep.CheckFrom, rep.Jobs, len(w.PRs))
	}
	if rep.Skipped[evaltest.SkipNoTests] != 1 || rep.Skipped[evaltest.SkipNoIssue] != 1 || len(rep.Skipped) != 2 {
		t.Errorf("skipped %v, want one without tests and one without an issue", rep.Skipped)
	}
	decided := map[int]string{}
	for _, r := range rep.Results {
		got := r.Reason
		if r.Kept {
			got = evaltest.Kept
		}
		decided[r.PR] = got
		if want := w.PRs[r.PR]; got != want {
			t.Errorf("PR #%d: %s (%s; base %v, merge %v), want %s", r.PR, got, r.Detail, r.Base, r.Merge, want)
		}
	}
	for n, want := range w.PRs {
		if _, ok := decided[n]; !ok && want != evaltest.SkipNoTests && want != evaltest.SkipNoIssue {
			t.Errorf("PR #%d (want %s) is not among the results", n, want)
		}
	}
	if rep.Candidates != len(rep.Results) || rep.Dropped[evaltest.Flaky] != 1 || rep.Dropped[evaltest.PassesAtBase] != 1 ||
		rep.Dropped[evaltest.FailsAtMerge] != 1 || rep.Dropped[evaltest.NoApply] != 1 {
		t.Errorf("%d candidates, %d results, dropped %v; want one of each reason", rep.Candidates, len(rep.Results), rep.Dropped)
	}

	tasks, err := eval.ReadTasks(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != evaltest.CountKept(w.PRs) || rep.Kept != len(tasks) {
		t.Fatalf("%d tasks written (report says %d), want %d", len(tasks), rep.Kept, evaltest.CountKept(w.PRs))
	}
	for _, task := range tasks {
		if w.PRs[task.PR] != evaltest.Kept || task.InstanceID != fmt.Sprintf("acme__calc-%d", task.PR) || task.Source != eval.SourcePR ||
			task.Repo != evaltest.Repo || len(task.Issues) != 1 {
			t.Errorf("task %+v", task)
			continue
		}
		if task.ProblemStatement != w.Statements[task.PR] {
			t.Errorf("%s: problem statement %q, want the issue's text %q", task.InstanceID, task.ProblemStatement, w.Statements[task.PR])
		}
		if parent := gittest.Run(t, w.Remote, "rev-parse", task.MergeCommit+"^1"); task.BaseCommit != parent {
			t.Errorf("%s: base %s, want the merge's first parent %s", task.InstanceID, task.BaseCommit, parent)
		}
		if !strings.Contains(task.Patch, "+++ b/lib/") || strings.Contains(task.Patch, "b/tests/") ||
			!strings.Contains(task.TestPatch, "+++ b/tests/test_") || strings.Contains(task.TestPatch, "b/lib/") {
			t.Errorf("%s: the code and test parts are not split by file:\n%s\n---\n%s", task.InstanceID, task.Patch, task.TestPatch)
		}
		// The check's timeout is the workflow's at the task's base: 90s after the workflow changed, 1m before.
		timeout := time.Minute
		if strings.Contains(gittest.Run(t, w.Remote, "log", "--format=%s", task.BaseCommit), evaltest.WorkflowChange) {
			timeout = 90 * time.Second
		}
		if len(task.TestFiles) != 1 || !strings.HasPrefix(task.TestFiles[0], "tests/test_") || task.CheckTimeout() != timeout ||
			task.ValidatedAt.IsZero() || task.CheckSeconds <= 0 {
			t.Errorf("%s: test files %v, timeout %s (want %s), validated %s in %.2fs", task.InstanceID, task.TestFiles, task.CheckTimeout(),
				timeout, task.ValidatedAt, task.CheckSeconds)
		}
	}
	if rep.Unboxed == "" {
		if _, err := os.Stat(w.Marker); err == nil {
			t.Error("a boxed check wrote a file of the host")
		}
	} else {
		t.Logf("checks ran unboxed here (%s): the marker is not checked", rep.Unboxed)
	}
	if b, err := os.ReadFile(rep.Log); err != nil || !strings.Contains(string(b), "sh run-tests.sh") {
		t.Errorf("the checks' log %s: %v", rep.Log, err)
	}
}

// TestEvalBuildFromCommits: a repository without a tracker of pull requests (the local folder tracker, its remote
// a path) gets its tasks from the commits of its default branch that changed code and tests, the message the
// task; the drops are the same as from pull requests, and a commit without tests or the first commit is no
// candidate. --max takes the newest candidates only.
func TestEvalBuildFromCommits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w := evaltest.New(t, dir)
	folder := filepath.Join(dir, "tracker")
	if err := os.MkdirAll(filepath.Join(folder, "issues"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(folder, "repo.toml"), []byte(fmt.Sprintf("name = %q\nremote = %q\n", evaltest.Repo, w.Remote)), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf("[workspace]\nroot = %q\n[tracker]\nkind = \"local\"\npath = %q\n", filepath.Join(dir, "root"), folder)
	out := filepath.Join(dir, "tasks.jsonl")
	listed := aceEval(t, dir, cfg, "--out", out, "--check", "sh run-tests.sh", "--dry-run")
	n := 0
	for _, l := range strings.Split(listed, "\n") {
		if strings.HasPrefix(l, "candidate  acme__calc-") {
			n++
		}
	}
	if n != len(w.Commits)-3 || !strings.Contains(listed, fmt.Sprintf("%d candidates (the others: changed no test 2, root commit 1); "+
		"none checked (--dry-run)", n)) {
		t.Errorf("--dry-run listed %d candidates, want %d:\n%s", n, len(w.Commits)-3, listed)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("--dry-run wrote %s: %v", out, err)
	}
	text := aceEval(t, dir, cfg, "--out", out, "--jobs", "3", "--check", "sh run-tests.sh", "--check-timeout", "1m")

	kept, dropped := 0, map[string]int{}
	for sha, want := range w.Commits {
		id := "acme__calc-" + sha
		switch want {
		case evaltest.Kept:
			kept++
			if !strings.Contains(text, "kept     "+id+"  commit "+sha+"\n") {
				t.Errorf("commit %s is not kept:\n%s", sha, text)
			}
		case evaltest.SkipNoTests, evaltest.SkipRoot:
			if strings.Contains(text, id) {
				t.Errorf("commit %s (%s) is a candidate:\n%s", sha, want, text)
			}
		default:
			dropped[want]++
			if !strings.Contains(text, "dropped  "+id+"  commit "+sha+": "+want) {
				t.Errorf("commit %s is not dropped as %s:\n%s", sha, want, text)
			}
		}
	}
	for _, line := range []string{
		fmt.Sprintf("acme/calc: %d commits seen, %d candidates (the others: changed no test 2, root commit 1)", len(w.Commits), len(w.Commits)-3),
		"check: `sh run-tests.sh` (--check), 3 at a time",
		fmt.Sprintf("kept %d, dropped %d (fails at merge 1, flaky 1, passes at base 1, patch does not apply 1)", kept, len(w.Commits)-3-kept),
		fmt.Sprintf("wrote %d tasks to %s", kept, out),
	} {
		if !strings.Contains(text, line) {
			t.Errorf("the summary lacks %q:\n%s", line, text)
		}
	}
	tasks, err := eval.ReadTasks(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != kept {
		t.Fatalf("%d tasks written, want %d", len(tasks), kept)
	}
	for _, task := range tasks {
		subject := gittest.Run(t, w.Remote, "log", "-1", "--format=%s", task.MergeCommit)
		if task.Source != eval.SourceCommit || task.PR != 0 || task.ProblemStatement != subject || task.CheckFrom != eval.CheckFromFlag {
			t.Errorf("task %s: source %s, PR %d, statement %q (want %q), check from %s", task.InstanceID, task.Source, task.PR,
				task.ProblemStatement, subject, task.CheckFrom)
		}
	}

	var rep buildReport
	if err := json.Unmarshal([]byte(aceEval(t, dir, cfg, "--json", "--out", filepath.Join(dir, "newest.jsonl"), "--max", "2",
		"--check", "sh run-tests.sh")), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Candidates != 2 || rep.Seen != 2 || rep.Dropped[evaltest.NoApply] != 1 || rep.Dropped[evaltest.Flaky] != 1 {
		t.Errorf("--max 2: %d seen, %d candidates, dropped %v; want the two newest (the .git tree, the flaky test)", rep.Seen,
			rep.Candidates, rep.Dropped)
	}
}
