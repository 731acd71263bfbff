package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/aceworks/ace/internal/fakegithub"
	"github.com/aceworks/ace/pkg/atomicfile"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// aceCmd runs the test binary as the ace command, with the world's configuration and secrets.
func (w *world) aceCmd(args ...string) *exec.Cmd {
	w.t.Helper()
	return aceCommand(w.t, w.bin, filepath.Join(w.dir, "ace.toml"), w.cfg,
		[]string{"GITHUB_TOKEN=" + botToken, "FAKE_AGENT_KEY=fake-agent-secret-value-42"}, args...)
}

// aceCommand runs exe (the test binary) as ace with cfg written to path, as a user's ace.toml would be, in this
// process's environment plus env. The file is replaced whole: an ace started a moment before, reading it, never
// sees it half-written (it took the default workspace.root, the user's, for an empty one).
func aceCommand(t testing.TB, exe, path string, cfg *config.Config, env []string, args ...string) *exec.Cmd {
	t.Helper()
	var b bytes.Buffer
	if err := toml.NewEncoder(&b).Encode(cfg); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.Write(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, append([]string{"ace", "--config", path}, args...)...)
	cmd.Env = append(append(os.Environ(), env...), "NO_COLOR=1")
	return cmd
}

func TestTwoPollProcessesClaimEveryIssueOnce(t *testing.T) {
	t.Parallel()
	w := newWorld(t, workScript, nil)
	// More issues than either process may run at once, so that passes overlap and both claim from the same list.
	const issues = 12
	w.cfg.Poll.MaxConcurrent = 4
	for i := 0; i < issues-1; i++ {
		n := w.gh.AddIssue(testRepo, fakegithub.IssueOptions{Title: fmt.Sprint("issue ", i), Author: "alice"})
		w.gh.Label(testRepo, n, "ace", "alice")
	}
	ctx := context.Background()
	deadline := time.Now().Add(3 * time.Minute)
	for pass := 0; ; pass++ {
		var wg sync.WaitGroup
		outs := make([]string, 2)
		for i := range outs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out, err := w.aceCmd("poll", "--once").CombinedOutput()
				if err != nil {
					t.Errorf("ace poll --once: %v\n%s", err, out)
				}
				outs[i] = string(out)
			}()
		}
		wg.Wait()
		sessions, _ := w.svc.Tmux.Sessions(ctx, "ace-")
		if len(sessions) > w.cfg.Poll.MaxConcurrent {
			t.Fatalf("pass %d: %d sessions alive, max_concurrent is %d", pass, len(sessions), w.cfg.Poll.MaxConcurrent)
		}
		runs, err := w.svc.Store.ListRuns(ctx, store.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int]int{}
		done := 0
		for _, r := range runs {
			seen[r.Issue]++
			if r.Status == store.StatusDone {
				done++
			}
		}
		for issue, n := range seen {
			if n != 1 {
				t.Fatalf("issue %d has %d runs, want exactly one", issue, n)
			}
		}
		if done == issues {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %d passes only %d of %d issues are done", pass+1, done, issues)
		}
	}
	if got := len(w.gh.PRs(testRepo)); got != issues {
		t.Fatalf("%d pull requests, want %d", got, issues)
	}
}

// TestKilledRunResumesWithoutDuplicates SIGKILLs `ace run` as soon as each step is reached, runs it again, and
// checks that nothing was done twice and nothing was lost.
func TestKilledRunResumesWithoutDuplicates(t *testing.T) {
	t.Parallel()
	steps := []workflow.Step{workflow.StepClaim, workflow.StepPrepare, workflow.StepStartSession,
		workflow.StepDeliver, workflow.StepMonitor, workflow.StepFinalize, workflow.StepReport}
	order := map[string]int{}
	for i, s := range []workflow.Step{workflow.StepClaim, workflow.StepPrepare, workflow.StepWriteTask, workflow.StepStartSession,
		workflow.StepDeliver, workflow.StepMonitor, workflow.StepFinalize, workflow.StepReport, workflow.StepDone} {
		order[string(s)] = i
	}
	for _, killAt := range steps {
		t.Run(string(killAt), func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, "busy 1500ms\n"+workScript, nil)
			ctx := context.Background()
			hold := make(chan struct{})
			if killAt == workflow.StepReport {
				// The report step is a few tracker calls: under load it was over (the run done) before the kill
				// landed, and the second `ace run` rightly began attempt 2. Its removal of the running label, a
				// request only a run's end makes, is held until the kill, so the kill lands inside the step.
				w.gh.Inject(fakegithub.Fault{Method: http.MethodDelete, Path: "/issues/193/labels/" + w.cfg.Labels.Running, Hold: hold})
			}
			cmd := w.aceCmd("run", "--issue", "193")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			reached := ""
			deadline := time.Now().Add(60 * time.Second)
			for time.Now().Before(deadline) {
				if r, err := w.svc.Store.LatestRun(ctx, testRepo, testIssue); err == nil && order[r.Step] >= order[string(killAt)] {
					reached = r.Step
					break
				}
				time.Sleep(2 * time.Millisecond)
			}
			_ = cmd.Process.Signal(syscall.SIGKILL)
			_ = cmd.Wait()
			close(hold) // a held request of the killed ace's, or the fault itself for the next ace's, goes through
			if reached == "" {
				t.Fatalf("never reached %s", killAt)
			}
			out, err := w.aceCmd("run", "--issue", "193").CombinedOutput()
			if err != nil {
				t.Fatalf("second ace run (after a kill at %s): %v\n%s", reached, err, out)
			}
			r, err := w.svc.Store.LatestRun(ctx, testRepo, testIssue)
			if err != nil || r.Status != store.StatusDone || r.Attempt != 1 {
				t.Fatalf("after a kill at %s: run %+v %v\n%s", reached, r, err, out)
			}
			if n := len(w.gh.PRs(testRepo)); n != 1 {
				t.Errorf("kill at %s: %d pull requests", reached, n)
			}
			if n := len(w.statusComments()); n != 1 {
				t.Errorf("kill at %s: %d status comments", reached, n)
			}
			copies, _ := filepath.Glob(filepath.Join(w.cfg.Workspace.Root, "worktrees", "acme", "widgets", "*"))
			if len(copies) != 1 {
				t.Errorf("kill at %s: working copies %v", reached, copies)
			}
			if p := w.prompts(); len(p) != 1 {
				t.Errorf("kill at %s: the agent got %d task prompts (a second session?): %q\n%s", reached, len(p), p, out)
			}
			if log := runGit(t, w.remote, "log", "--format=%s", r.Branch); !strings.Contains(log, "Add GREETING.md") {
				t.Errorf("kill at %s: the agent's commit is not on the pushed branch:\n%s", reached, log)
			}
			if w.sessionAlive() {
				t.Errorf("kill at %s: session left alive", reached)
			}
		})
	}
}

func runGit(t *testing.T, dir string, args ...string) string {
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestTwoProcessesStartTogetherOnAFreshRoot: two ace processes started at the same moment on a fresh
// workspace.root both work: the store's and River's migrations, the helper scripts, the job queue.
func TestTwoProcessesStartTogetherOnAFreshRoot(t *testing.T) {
	t.Parallel()
	w := newWorld(t, workScript, nil)
	w.gh.Unlabel(testRepo, testIssue, "ace", "alice") // nothing to start: this is about starting up
	for round := range 4 {
		w.cfg.Workspace.Root = filepath.Join(w.dir, fmt.Sprint("fresh-", round))
		var wg sync.WaitGroup
		outs := make([][]byte, 2)
		errs := make([]error, 2)
		for i := range outs {
			cmd := w.aceCmd("poll", "--once")
			wg.Add(1)
			go func() {
				defer wg.Done()
				outs[i], errs[i] = cmd.CombinedOutput()
			}()
		}
		wg.Wait()
		for i := range outs {
			if errs[i] != nil {
				t.Fatalf("round %d, process %d: %v\n%s", round, i, errs[i], outs[i])
			}
		}
	}
}
