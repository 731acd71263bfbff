package e2e_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/fakegithub"
	"github.com/aceworks/ace/internal/gittest"
	"github.com/aceworks/ace/internal/testkit"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// startPoll starts `ace poll` as a service; the test ends it by PID if it is still running.
func (w *world) startPoll() (*exec.Cmd, *testkit.Buffer) {
	w.t.Helper()
	out := &testkit.Buffer{}
	cmd := w.aceCmd("poll", "--interval", "300ms")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd, out
}

func (w *world) runsDone(issues ...int) bool {
	for _, n := range issues {
		r, err := w.svc.Store.LatestRun(context.Background(), testRepo, n)
		if err != nil || r.Status != store.StatusDone {
			return false
		}
	}
	return true
}

// TestPollServicesShareTheWork: two `ace poll` services over one store start and finish labelled issues by
// themselves, each issue exactly once; when one is stopped (SIGINT) the other finishes what comes next.
func TestPollServicesShareTheWork(t *testing.T) {
	t.Parallel()
	w := newWorld(t, workScript, nil)
	w.svc.Queue.Stop(context.Background()) // only the two services work runs here
	second := w.gh.AddIssue(testRepo, fakegithub.IssueOptions{Title: "Another greeting", Author: "alice"})
	w.gh.Label(testRepo, second, "ace", "alice")

	first, firstOut := w.startPoll()
	other, otherOut := w.startPoll()
	testkit.WaitFor(w.t, "the services have finished both issues", 90*time.Second, func() bool { return w.runsDone(testIssue, second) })

	if err := first.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := first.Wait(); err != nil {
		t.Fatalf("first ace poll ended with %v:\n%s", err, firstOut)
	}
	third := w.gh.AddIssue(testRepo, fakegithub.IssueOptions{Title: "A third greeting", Author: "alice"})
	w.gh.Label(testRepo, third, "ace", "alice")
	testkit.WaitFor(w.t, "the other service has finished the new issue", 90*time.Second, func() bool { return w.runsDone(third) })
	if prs := w.gh.PRs(testRepo); len(prs) != 3 {
		t.Fatalf("%d pull requests, want 3", len(prs))
	}
	for _, n := range []int{testIssue, second, third} {
		if r := w.latest(n); r.Attempt != 1 {
			t.Errorf("issue %d has %d attempts, want exactly one run", n, r.Attempt)
		}
	}
	if s := w.statusComments(); len(s) != 1 {
		t.Errorf("%d status comments on #%d, want 1", len(s), testIssue)
	}
	if err := other.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := other.Wait(); err != nil {
		t.Fatalf("other ace poll ended with %v:\n%s", err, otherOut)
	}
}

// TestWaitingRunIsLookedAtEveryPollInterval: a run waiting for a human is looked at (its comments fetched) once
// per poll.interval, not on every monitor tick; a change to the run (ace send) is looked at at once.
func TestWaitingRunIsLookedAtEveryPollInterval(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "question Formal or casual?\n"+workScript, func(c *config.Config) {
		c.Poll.Interval = config.Duration{Duration: time.Hour}
	})
	r := w.run(workflow.UntilSettled)
	if r.Status != store.StatusWaitingInput {
		t.Fatalf("run %s at %s, want waiting for a human", r.Status, r.Step)
	}
	// Many monitor intervals pass: the job sleeps for the poll interval, no comment is read.
	before := w.gh.PathCount("/comments")
	time.Sleep(10 * w.cfg.Monitor.Interval.Duration)
	if n := w.gh.PathCount("/comments") - before; n > 1 {
		t.Fatalf("%d comment requests for a run not due", n)
	}
	// ace send changes the run and wakes its job.
	if err := w.svc.Engine.Send(context.Background(), w.latest(testIssue), "casual"); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(w.t, "the answered run is done", 60*time.Second, func() bool { return w.runsDone(testIssue) })
}

// TestSendWhilePollServes: `ace send` reaches an agent whose run `ace poll` is serving.
func TestSendWhilePollServes(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "question Formal or casual?\n"+workScript, nil)
	w.svc.Queue.Stop(context.Background())
	poll, pollOut := w.startPoll()
	testkit.WaitFor(w.t, "the run waits for a human", 60*time.Second, func() bool {
		r, err := w.svc.Store.LatestRun(context.Background(), testRepo, testIssue)
		return err == nil && r.Status == store.StatusWaitingInput
	})
	if out, err := w.aceCmd("send", "193", "casual, please").CombinedOutput(); err != nil {
		t.Fatalf("ace send while ace poll serves: %v\n%s", err, out)
	}
	testkit.WaitFor(w.t, "the run is done", 60*time.Second, func() bool { return w.runsDone(testIssue) })
	if p := w.prompts(); len(p) < 2 || p[1] != "casual, please" {
		t.Fatalf("prompts %q, want the answer byte-exact second", p)
	}
	if err := poll.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := poll.Wait(); err != nil {
		t.Fatalf("ace poll: %v\n%s", err, pollOut)
	}
}

// TestNamesakeReposGetTheirOwnSessions: acme/widgets#193 and a fork, other/widgets#193, running at once, each
// get a tmux session of their own (ace-widgets-193 is taken: the second carries a hash of its owner/repo), and
// both reach a pull request.
func TestNamesakeReposGetTheirOwnSessions(t *testing.T) {
	t.Parallel()
	// Both agents work until the sessions are checked: a first run already done would have freed its name.
	gate := filepath.Join(t.TempDir(), "go")
	w := newWorld(t, "sh while [ ! -e "+gate+" ]; do sleep 0.05; done\n"+workScript, nil)
	const fork = "other/widgets"
	gittest.BareRepo(t, filepath.Join(w.dir, "git", "other"), "widgets", map[string]string{"README.md": "# fork\n"})
	w.gh.AddRepo(fork, fakegithub.RepoOptions{DefaultBranch: "main", CloneURL: w.git.URL("other/widgets.git")})
	w.gh.SetPermission(fork, "alice", "write")
	w.gh.AddIssue(fork, fakegithub.IssueOptions{Number: testIssue, Title: "Add a greeting", Body: "Please.", Author: "alice"})

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var runs []*store.Run
	for _, repo := range []string{testRepo, fork} {
		r, err := w.svc.Engine.Open(ctx, workflow.Request{Repo: repo, Issue: testIssue, NewAttempt: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.svc.Engine.Follow(ctx, r, workflow.UntilMonitoring); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	if runs[0].Session != "ace-widgets-193" || runs[1].Session == runs[0].Session ||
		!strings.HasPrefix(runs[1].Session, "ace-widgets_") {
		t.Fatalf("sessions %q and %q", runs[0].Session, runs[1].Session)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if err := w.svc.Engine.Follow(ctx, r, workflow.UntilSettled); err != nil || r.Status != store.StatusDone {
			t.Fatalf("%s: %s %v", r.Repo, r.Status, err)
		}
	}
	if len(w.gh.PRs(testRepo)) != 1 || len(w.gh.PRs(fork)) != 1 {
		t.Fatalf("pull requests: %d on %s, %d on %s", len(w.gh.PRs(testRepo)), testRepo, len(w.gh.PRs(fork)), fork)
	}
}
