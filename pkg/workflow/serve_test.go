package workflow_test

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/gittest"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tracker/github/fakegithub"
	"github.com/aceworks/ace/pkg/workflow"
)

// lockedBuffer collects a process's output while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startPoll starts `ace poll` as a service; the test ends it by PID if it is still running.
func (w *world) startPoll() (*exec.Cmd, *lockedBuffer) {
	w.t.Helper()
	out := &lockedBuffer{}
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

func (w *world) waitUntil(what string, d time.Duration, cond func() bool) {
	w.t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			w.t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
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

// TestPollServiceWatchesAndHandsOver: `ace poll` as a service starts and finishes labelled issues by itself; a
// second one waits while the first runs, and takes over — finishing a newly labelled issue — once it is stopped.
func TestPollServiceWatchesAndHandsOver(t *testing.T) {
	w := newWorld(t, workScript, nil)
	second := w.gh.AddIssue(testRepo, fakegithub.IssueOptions{Title: "Another greeting", Author: "alice"})
	w.gh.Label(testRepo, second, "ace", "alice")

	first, firstOut := w.startPoll()
	w.waitUntil("the first service has finished both issues", 90*time.Second, func() bool { return w.runsDone(testIssue, second) })
	standby, standbyOut := w.startPoll()
	w.waitUntil("the second service says it waits", 30*time.Second, func() bool {
		return strings.Contains(standbyOut.String(), "waiting to take over")
	})

	if err := first.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := first.Wait(); err != nil {
		t.Fatalf("first ace poll ended with %v:\n%s", err, firstOut)
	}
	third := w.gh.AddIssue(testRepo, fakegithub.IssueOptions{Title: "A third greeting", Author: "alice"})
	w.gh.Label(testRepo, third, "ace", "alice")
	w.waitUntil("the second service has finished the new issue", 90*time.Second, func() bool { return w.runsDone(third) })

	if prs := w.gh.PRs(testRepo); len(prs) != 3 {
		t.Fatalf("%d pull requests, want 3", len(prs))
	}
	if err := standby.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := standby.Wait(); err != nil {
		t.Fatalf("second ace poll ended with %v:\n%s", err, standbyOut)
	}
	// Both services let go of every claim they held.
	for _, n := range []int{testIssue, second, third} {
		if holder, _, err := w.svc.Store.ClaimHolder(context.Background(), testRepo, n); err != nil || holder != "" {
			t.Errorf("issue %d still claimed by %q (%v)", n, holder, err)
		}
	}
}

// TestWatcherKeepsClaimsBetweenPasses: a Watcher holds the claim of each run it drives from one pass to the
// next (so no other process drives it meanwhile), and lets go when the run ends or the Watcher closes.
func TestWatcherKeepsClaimsBetweenPasses(t *testing.T) {
	w := newWorld(t, "busy 1s\n"+workScript, nil)
	r := w.run(workflow.UntilMonitoring)
	ctx := context.Background()
	watcher := w.svc.Engine.NewWatcher()
	rep, err := watcher.Pass(ctx)
	if err != nil || rep.Ticked != 1 {
		t.Fatalf("first pass: %+v %v", rep, err)
	}
	holder, _, err := w.svc.Store.ClaimHolder(ctx, r.Repo, r.Issue)
	if err != nil || holder == "" {
		t.Fatalf("between passes the claim is held by %q (%v), want the watcher's process", holder, err)
	}
	if ok, err := w.svc.Store.Claim(ctx, r.Repo, r.Issue, "elsewhere:1", time.Minute); err != nil || ok {
		t.Fatalf("another owner claimed a watched run: %v %v", ok, err)
	}
	// A claim lost all the same (it lapsed while the store was out of reach, and another process took it):
	// the watcher notices and leaves the run to its new holder.
	if err := w.svc.Store.ReleaseClaim(ctx, r.Repo, r.Issue, holder); err != nil {
		t.Fatal(err)
	}
	if ok, err := w.svc.Store.Claim(ctx, r.Repo, r.Issue, "elsewhere:1", time.Minute); err != nil || !ok {
		t.Fatalf("claim after the lapse: %v %v", ok, err)
	}
	if rep, err := watcher.Pass(ctx); err != nil || rep.Ticked != 0 || rep.Busy != 1 {
		t.Fatalf("pass over a run another process now holds: %+v %v", rep, err)
	}
	if err := w.svc.Store.ReleaseClaim(ctx, r.Repo, r.Issue, "elsewhere:1"); err != nil {
		t.Fatal(err)
	}
	w.waitUntil("the run is done", 60*time.Second, func() bool {
		if _, err := watcher.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		return w.runsDone(testIssue)
	})
	if holder, _, _ := w.svc.Store.ClaimHolder(ctx, r.Repo, r.Issue); holder != "" {
		t.Fatalf("the finished run is still claimed by %q", holder)
	}
	watcher.Close(ctx)
}

// TestWatcherLooksAtWaitingRunsEveryPollInterval: a run waiting for a human is looked at (its comments fetched)
// once per poll.interval, not on every pass; a change to the run (ace send, ace stop) is looked at at once.
func TestWatcherLooksAtWaitingRunsEveryPollInterval(t *testing.T) {
	w := newWorld(t, "question Formal or casual?\n"+workScript, func(c *config.Config) {
		c.Poll.Interval = config.Duration{Duration: time.Hour}
	})
	w.run(workflow.UntilMonitoring)
	ctx := context.Background()
	watcher := w.svc.Engine.NewWatcher()
	defer watcher.Close(ctx)
	w.waitUntil("the run waits for a human", 60*time.Second, func() bool {
		if _, err := watcher.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		return w.latest(testIssue).Status == store.StatusWaitingInput
	})
	// The pass after the question reads the comments once, and asks to come back in an hour.
	if _, err := watcher.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	before := w.gh.PathCount("/comments")
	for range 5 {
		rep, err := watcher.Pass(ctx)
		if err != nil || rep.Ticked != 0 {
			t.Fatalf("pass over a run not due: %+v %v", rep, err)
		}
	}
	if n := w.gh.PathCount("/comments") - before; n != 0 {
		t.Fatalf("%d comment requests for a run not due", n)
	}
	// ace send changes the run: the next pass looks at it.
	r := w.latest(testIssue)
	if err := w.svc.Engine.Send(ctx, r, "casual"); err != nil {
		t.Fatal(err)
	}
	w.waitUntil("the answered run is done", 60*time.Second, func() bool {
		if _, err := watcher.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		return w.runsDone(testIssue)
	})
}

// TestSendWhilePollServes: `ace send` reaches an agent whose run `ace poll` is serving (and holds the claim of).
func TestSendWhilePollServes(t *testing.T) {
	w := newWorld(t, "question Formal or casual?\n"+workScript, nil)
	poll, pollOut := w.startPoll()
	w.waitUntil("the run waits for a human", 60*time.Second, func() bool {
		r, err := w.svc.Store.LatestRun(context.Background(), testRepo, testIssue)
		return err == nil && r.Status == store.StatusWaitingInput
	})
	if out, err := w.aceCmd("send", "193", "casual, please").CombinedOutput(); err != nil {
		t.Fatalf("ace send while ace poll serves: %v\n%s", err, out)
	}
	w.waitUntil("the run is done", 60*time.Second, func() bool { return w.runsDone(testIssue) })
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
	w := newWorld(t, "busy 1s\n"+workScript, nil)
	const fork = "other/widgets"
	gittest.BareRepo(t, filepath.Join(w.dir, "git", "other"), "widgets", map[string]string{"README.md": "# fork\n"})
	w.gh.AddRepo(fork, fakegithub.RepoOptions{DefaultBranch: "main", CloneURL: w.git.URL("other/widgets.git")})
	w.gh.SetPermission(fork, "alice", "write")
	w.gh.AddIssue(fork, fakegithub.IssueOptions{Number: testIssue, Title: "Add a greeting", Body: "Please.", Author: "alice"})

	ctx := context.Background()
	var runs []*store.Run
	for _, repo := range []string{testRepo, fork} {
		release, err := w.svc.Engine.Acquire(ctx, repo, testIssue)
		if err != nil {
			t.Fatal(err)
		}
		r, err := w.svc.Engine.Open(ctx, workflow.Request{Repo: repo, Issue: testIssue, NewAttempt: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.svc.Engine.Drive(ctx, r, workflow.UntilMonitoring); err != nil {
			t.Fatal(err)
		}
		release()
		runs = append(runs, r)
	}
	if runs[0].Session != "ace-widgets-193" || runs[1].Session == runs[0].Session ||
		!strings.HasPrefix(runs[1].Session, "ace-widgets_") {
		t.Fatalf("sessions %q and %q", runs[0].Session, runs[1].Session)
	}
	watcher := w.svc.Engine.NewWatcher()
	defer watcher.Close(ctx)
	w.waitUntil("both runs are done", 90*time.Second, func() bool {
		if _, err := watcher.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		a, _ := w.svc.Store.GetRun(ctx, runs[0].ID)
		b, _ := w.svc.Store.GetRun(ctx, runs[1].ID)
		return a.Status == store.StatusDone && b.Status == store.StatusDone
	})
	if len(w.gh.PRs(testRepo)) != 1 || len(w.gh.PRs(fork)) != 1 {
		t.Fatalf("pull requests: %d on %s, %d on %s", len(w.gh.PRs(testRepo)), testRepo, len(w.gh.PRs(fork)), fork)
	}
}

// TestWatcherTicksMonitoredRunsEveryPass: a run at the monitor step, which asks to be looked at again after
// monitor.interval, is ticked by every pass made that far apart.
func TestWatcherTicksMonitoredRunsEveryPass(t *testing.T) {
	w := newWorld(t, "hang\n", nil)
	w.run(workflow.UntilMonitoring)
	ctx := context.Background()
	watcher := w.svc.Engine.NewWatcher()
	defer watcher.Close(ctx)
	// Passes start monitor.interval apart, as `ace poll` makes them: each lasts a little, so a run always
	// comes due a moment after the pass that ticked it.
	for i := range 4 {
		next := time.Now().Add(w.cfg.Monitor.Interval.Duration)
		rep, err := watcher.Pass(ctx)
		if err != nil || rep.Ticked != 1 {
			t.Fatalf("pass %d: %+v %v", i, rep, err)
		}
		time.Sleep(time.Until(next))
	}
}
