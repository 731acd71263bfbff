package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/aceworks/ace/internal/realcli"
)

// runResult is what one run measured.
type runResult struct {
	runner string
	err    error
	// answer is from the human's comment on the issue to the model server receiving the first request that
	// carries it.
	answer time.Duration
	// ace is the CPU of ace's process from the label to the pull request; aceChildren that of the processes it
	// waited for meanwhile (git, tmux commands), the exec runner's supervisors and what ran under them left out.
	ace, aceChildren time.Duration
	// aceIdle is ace's CPU per second before the label, polling with nothing to do.
	aceIdle time.Duration
	// helper is the own CPU of the runner's helper processes (ace __headless, ace __live) over the run, helpers
	// how many there were.
	helper  time.Duration
	helpers int
	// cli is the agent CLI's CPU over the run (the tools it ran included), clis how many processes of it ran.
	cli  time.Duration
	clis int
	// tmux is the tmux server's own CPU from the label to the pull request.
	tmux time.Duration
	// asked is from the label to the question on the issue; wall from the label to the pull request.
	asked, wall time.Duration
}

// helperKind is the helper program each runner has (none for tmux: the pane runs the CLI itself).
var helperKind = map[string]string{"exec": "__headless", "live": "__live"}

// runOnce builds a world for runner, measures one run in it, and closes it. A failed run keeps its directory.
func runOnce(ctx context.Context, dir, exe, runner string, c realcli.CLI, o options) (res runResult, keep bool) {
	res.runner = runner
	w, err := newWorld(ctx, dir, exe, runner, c, o)
	if err != nil {
		res.err = err
		return res, true
	}
	s, err := startSampler(c.Bin, 100*time.Millisecond)
	if err != nil {
		w.close()
		res.err = err
		return res, true
	}
	res.err = measure(ctx, w, s, o, &res)
	stopErr := w.stopAce(45 * time.Second)
	cliCPU, _, clis := s.totals()
	s.end()
	res.cli, res.clis = cliCPU, clis
	recs, rerr := readRecords(w.records)
	for _, r := range recs {
		res.helper += r.Self
		if r.Kind == helperKind[runner] {
			res.helpers++
		}
	}
	if res.err == nil {
		switch {
		case stopErr != nil:
			res.err = stopErr
		case rerr != nil:
			res.err = rerr
		case runner != "tmux" && res.helpers == 0:
			res.err = fmt.Errorf("no %s helper ran: the run did not use the %s runner", helperKind[runner], runner)
		case runner == "tmux" && len(recs) > 0:
			res.err = fmt.Errorf("%d helpers ran for a tmux run", len(recs))
		}
	}
	if err := w.saveRequests(); err != nil && res.err == nil {
		res.err = err
	}
	if left := w.close(); len(left) > 0 && res.err == nil {
		res.err = fmt.Errorf("processes left after ace stopped, ended: %v", left)
	}
	if res.err != nil {
		res.err = fmt.Errorf("%w\nace's log (%s) ends:\n%s", res.err, filepath.Join(dir, "ace.log"), w.logTail(30))
	}
	return res, res.err != nil
}

// measure labels the issue, answers the question when ace has posted it, and waits for the pull request.
func measure(ctx context.Context, w *world, s *sampler, o options, res *runResult) error {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if err := w.waitFor(ctx, "ace talks to GitHub", func() bool { n, _, _ := w.gh.Counts(); return n > 0 }); err != nil {
		return err
	}
	// ace idle: started, polling for labelled issues with none there.
	idle0, err := w.aceCPU()
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(o.idle):
	}
	before, err := w.aceCPU()
	if err != nil {
		return err
	}
	res.aceIdle = time.Duration(float64(before.Self-idle0.Self) / o.idle.Seconds())
	_, tmux0, _ := s.totals()

	label := time.Now()
	w.gh.Label(repo, issueN, "ace", "alice")
	if err := w.waitFor(ctx, "the question is on the issue", w.asked); err != nil {
		return err
	}
	res.asked = time.Since(label)
	t0 := time.Now()
	w.gh.AddComment(repo, issueN, "alice", answer)
	var arrived time.Time
	if err := w.waitFor(ctx, "the answer reaches the model", func() bool {
		var ok bool
		arrived, ok = w.answerArrived()
		return ok
	}); err != nil {
		return err
	}
	res.answer = arrived.Sub(t0)
	if err := w.waitFor(ctx, "the pull request", func() bool { return len(w.gh.PRs(repo)) > 0 }); err != nil {
		return err
	}
	pr := time.Now()
	res.wall = pr.Sub(label)
	after, err := w.aceCPU()
	if err != nil {
		return err
	}
	_, tmux1, _ := s.totals()
	res.ace, res.tmux = after.Self-before.Self, tmux1-tmux0

	// The exec runner's supervisors that ace waited for before the pull request count as its helpers, not as
	// its children.
	recs, err := readRecords(w.records)
	if err != nil {
		return err
	}
	var supervised time.Duration
	for _, r := range recs {
		if r.Kind == "__headless" && r.End.Before(pr) {
			supervised += r.Self + r.Children
		}
	}
	res.aceChildren = max(after.Children-before.Children-supervised, 0)

	if n := w.questions(); n != 1 {
		return fmt.Errorf("%d questions on the issue, want 1", n)
	}
	// The run ends (ace:done) once ace has reported; then no supervisor may be left running.
	if err := w.waitFor(ctx, "the run is done", func() bool {
		return slices.Contains(w.gh.Issue(repo, issueN).Labels, "ace:done")
	}); err != nil {
		return err
	}
	noSupervisor := func() bool { return len(helpersRunning("__headless")) == 0 }
	if err := w.waitFor(ctx, "the supervisors have exited", noSupervisor); err != nil {
		return errors.Join(err, fmt.Errorf("supervisors still running: %v", helpersRunning("__headless")))
	}
	return nil
}
