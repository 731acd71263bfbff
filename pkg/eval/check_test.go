package eval

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/gittest"
)

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, body := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCheckPutsTheTestFilesBackBeforeTheTestPatch: work that edits the tests the check will bring (weakening one,
// writing another in its place) counts for nothing — the check restores them as they were at the base before it
// applies the test patch — so it fails, while the change itself passes. The check's environment is the
// checker's, the task's and ace's: HOME, CI, the test files.
func TestCheckPutsTheTestFilesBackBeforeTheTestPatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := gittest.WorkRepo(t)
	writeFiles(t, repo, map[string]string{
		"lib/add.sh":        "add() { echo $(($1 - $2)); }\n",
		"tests/test_old.sh": ". ./lib/add.sh\n[ \"$(add 0 0)\" = 0 ]\n",
	})
	gittest.Run(t, repo, "add", "-A")
	gittest.Run(t, repo, "commit", "-qm", "base")
	base := gittest.Run(t, repo, "rev-parse", "HEAD")
	writeFiles(t, repo, map[string]string{
		"lib/add.sh":        "add() { echo $(($1 + $2)); }\n",
		"tests/test_old.sh": ". ./lib/add.sh\n[ \"$(add 2 2)\" = 4 ]\n",
		"tests/test_new.sh": ". ./lib/add.sh\n[ \"$(add 2 3)\" = 5 ]\n",
	})
	gittest.Run(t, repo, "add", "-A")
	gittest.Run(t, repo, "commit", "-qm", "fix")
	fix := gittest.Run(t, repo, "rev-parse", "HEAD")
	tests := []string{"tests/test_new.sh", "tests/test_old.sh"}
	patch, err := diffOf(ctx, repo, base, fix, []string{"lib/add.sh"})
	if err != nil {
		t.Fatal(err)
	}
	testPatch, err := diffOf(ctx, repo, base, fix, tests)
	if err != nil {
		t.Fatal(err)
	}
	task := &Task{Repo: "acme/calc", BaseCommit: base, TestFiles: tests, TestPatch: testPatch, CheckTimeoutSeconds: 60,
		CheckEnv: map[string]string{"FROM_TASK": "yes"},
		Check: []string{"sh", "-c", `env > "$HOME/../env.txt"; for t in $ACE_EVAL_TEST_FILES; do sh "$t" || exit 1; done
i=0; while [ $i -lt 100000 ]; do i=$((i + 1)); done # CPU the check reports`}}
	home := filepath.Join(t.TempDir(), "home")
	c := &Checker{Home: home, Env: map[string]string{"PATH": os.Getenv("PATH"), "FROM_CHECKER": "yes"}}

	check := func(work map[string]string, applyFix bool) Outcome {
		t.Helper()
		dir := filepath.Join(t.TempDir(), "copy")
		gittest.Run(t, repo, "worktree", "add", "-q", "--detach", dir, base)
		writeFiles(t, dir, work)
		if applyFix {
			if err := applyPatch(ctx, dir, patch); err != nil {
				t.Fatal(err)
			}
		}
		o, err := c.Check(ctx, dir, task)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	cheat := map[string]string{"tests/test_old.sh": "exit 0\n", "tests/test_new.sh": "exit 0\n"}
	if o := check(cheat, false); !o.Applied || o.Passed {
		t.Fatalf("work that rewrote the tests: applied %v (%s), passed %v; want the test patch applied and the check failed",
			o.Applied, o.Why, o.Passed)
	}
	o := check(cheat, true)
	if !o.Applied || !o.Passed || o.Took <= 0 || o.Took > time.Minute || o.CPU <= 0 || strings.Contains(o.Output, cpuMark) {
		t.Fatalf("the fix: applied %v (%s), passed %v in %s, CPU %s:\n%s", o.Applied, o.Why, o.Passed, o.Took, o.CPU, o.Output)
	}
	env, err := os.ReadFile(filepath.Join(home, "..", "env.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range []string{"HOME=" + home, "CI=1", "ACE_REPO=acme/calc", "FROM_TASK=yes", "FROM_CHECKER=yes",
		"ACE_EVAL_TEST_FILES=tests/test_new.sh"} {
		if !strings.Contains(string(env), kv+"\n") {
			t.Errorf("the check's environment lacks %s:\n%s", kv, env)
		}
	}
	allowed := []string{"HOME", "CI", "ACE_REPO", "ACE_EVAL_TEST_FILES", "FROM_TASK", "FROM_CHECKER", "PATH", "PWD", "OLDPWD", "SHLVL", "_"}
	for _, line := range strings.Split(string(env), "\n") {
		if k, _, ok := strings.Cut(line, "="); ok && !slices.Contains(allowed, k) && !strings.HasPrefix(k, "tests/") {
			t.Errorf("the check got %s, which is none of the checker's, the task's or ace's", k)
		}
	}
}

// TestCheckEndsAtItsTimeout: a check that outlives the task's timeout is killed with everything it started and
// says it timed out, not that it failed.
func TestCheckEndsAtItsTimeout(t *testing.T) {
	t.Parallel()
	repo := gittest.WorkRepo(t)
	base := gittest.Run(t, repo, "rev-parse", "HEAD")
	task := &Task{Repo: "acme/calc", BaseCommit: base, CheckTimeoutSeconds: 0.3,
		Check: []string{"sh", "-c", "sleep 30 & sleep 30; echo never"}}
	c := &Checker{Home: filepath.Join(t.TempDir(), "home"), Env: map[string]string{"PATH": os.Getenv("PATH")}}
	start := time.Now()
	o, err := c.Check(context.Background(), repo, task)
	if err != nil {
		t.Fatal(err)
	}
	if !o.Applied || o.Passed || !o.TimedOut || time.Since(start) > 20*time.Second || strings.Contains(o.Output, "never") {
		t.Fatalf("applied %v, passed %v, timed out %v after %s: %q", o.Applied, o.Passed, o.TimedOut, time.Since(start), o.Output)
	}
}
