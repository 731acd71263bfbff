package service_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/pgtest"
	"github.com/aceworks/ace/internal/testkit"
	"github.com/aceworks/ace/pkg/procs"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tmuxops"
	"github.com/aceworks/ace/pkg/workflow"
)

// TestFleetSurvivesAPostgresRestart: three hosts work eight issues (six at once, two queued) over a PostgreSQL of
// the test's own. Mid-run one host dies (kill -9, its agents with it) and PostgreSQL is shut down by its PID; it
// stays away for longer than host.dead_after (every connection, River's and the store's, is gone) and starts again
// on the same port and data dir. Meanwhile host beta's `ace poll` waits it out, and host alpha's is stopped
// (SIGTERM: it exits within 5 s though the database does not answer) and started again once the database is back.
// The runs of both stay theirs: none is taken for a dead host's and moved, though every heartbeat in the database
// is older than dead_after when it is back. Alpha's agents run on (one start each: its new ace was never cut
// off); beta, cut off for longer than half of dead_after, fenced itself — its agents stopped, as a host cut off
// alone must — and starts each again from its working copy once the database answers (two starts each). The dead host's runs
// move, but only once the live hosts have been in touch with the database for dead_after. Every issue ends with
// one run, one pull request and one status comment, and the live hosts still stop cleanly on SIGTERM.
func TestFleetSurvivesAPostgresRestart(t *testing.T) {
	t.Parallel()
	pg := pgtest.Own(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	url, err := pg.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	in := pgConfig(t, url)
	// Each agent writes its issue to starts.txt when it gets its prompt (an agent started again, in place or on
	// another host, writes it again), then works long enough to be busy when PostgreSQL goes away.
	starts := filepath.Join(t.TempDir(), "starts.txt")
	scriptAgent(t, in, fmt.Sprintf("sh echo \"$ACE_ISSUE\" >> %s\nbusy 3s\n%s", starts, workScript))
	in.Cfg.Poll.MaxConcurrent = 2
	nums := labelIssues(in.GH, 8)
	st := openStoreAt(t, url)
	live := []*fleetHost{startHost(t, in.Cfg, in.Exe, "alpha"), startHost(t, in.Cfg, in.Exe, "beta")}
	doomed := startHost(t, in.Cfg, in.Exe, "doomed")
	deadAfter := doomed.cfg.Host.DeadAfter.Duration
	t.Cleanup(func() {
		// A failure seen once in many runs (in CI: six agents not working after 90 s) is read from the output.
		if !t.Failed() {
			return
		}
		for _, h := range append(live, doomed) {
			out := h.out.String()
			t.Logf("host %s's log, its end:\n%s", h.name, out[max(0, len(out)-16<<10):])
		}
		for n, rs := range runsByIssue(t, st) {
			for _, r := range rs {
				t.Logf("issue %d: run %d on %s at %s (%s) %s", n, r.ID, r.Host, r.Step, r.Status, r.Error)
			}
		}
	})

	testkit.WaitFor(t, "six agents are working", 90*time.Second, func() bool { return len(startsOf(t, starts)) >= 6 })
	held := map[int]string{} // issue → host, as PostgreSQL goes away
	for n, rs := range runsByIssue(t, st) {
		held[n] = rs[len(rs)-1].Host
	}
	marks := make([]int, len(live))
	for i, h := range live {
		marks[i] = len(h.out.String())
	}
	doomed.kill()
	kctx, kcancel := context.WithTimeout(ctx, 10*time.Second)
	_ = tmuxops.New(doomed.cfg.Tmux.Socket).KillServer(kctx) // the machine is gone: its agents too
	kcancel()
	pid := pg.PID()
	down := time.Now()
	if err := pg.Shutdown(pgtest.Fast); err != nil {
		t.Fatal(err)
	}
	t.Logf("host doomed killed, PostgreSQL (pid %d) shut down; runs by host %v", pid, held)
	// The live hosts find the database gone (their heartbeats fail) …
	testkit.WaitFor(t, "each live host notices PostgreSQL is gone", 30*time.Second, func() bool {
		for i, h := range live {
			if !strings.Contains(h.out.String()[marks[i]:], "heartbeat") {
				return false
			}
		}
		return true
	})
	// Host alpha is stopped meanwhile: its work handed back as far as it can be, it exits within 5 s.
	live[0].terminate(t, " with PostgreSQL away")
	// PostgreSQL stays away for longer than host.dead_after: when it is back, every heartbeat in it is older.
	<-time.After(time.Until(down.Add(deadAfter + time.Second)))
	if err := pg.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	t.Logf("PostgreSQL back (pid %d) after %s", pg.PID(), back.Sub(down).Round(time.Millisecond))
	live[0].restart(t) // the same host: its name, root and tmux server

	testkit.WaitFor(t, "every issue has its pull request", 120*time.Second, func() bool {
		done, err := doneAll(st, nums)
		if err != nil {
			t.Logf("the test's own store: %v", err) // its connections went with the restart too
		}
		return done
	})
	t.Logf("every run finished %s after PostgreSQL came back", time.Since(back).Round(time.Millisecond))

	for _, h := range live {
		if ps, err := procs.Read(h.cmd.Process.Pid); err != nil || ps.State == 'Z' {
			t.Fatalf("host %s's ace exited\n%s", h.name, h.out)
		}
	}
	got := startsOf(t, starts)
	by := runsByIssue(t, st)
	moved := 0
	finished := map[string][]time.Duration{} // by the host that held the run when PostgreSQL went away ("" = queued)
	for _, n := range nums {
		if len(by[n]) != 1 {
			t.Errorf("issue %d has %d runs, want 1", n, len(by[n]))
			continue
		}
		r := by[n][0]
		evs, err := st.Events(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		var move *store.Event
		for _, ev := range evs {
			if ev.Kind == string(workflow.EventMoved) {
				move = &ev
			}
		}
		switch {
		case held[n] == "doomed" && move == nil:
			t.Errorf("issue %d: the run of the dead host never moved", n)
		case held[n] == "doomed":
			moved++
			if after := move.Time.Sub(back); after < deadAfter-time.Second {
				t.Errorf("issue %d: the dead host's run moved %s after PostgreSQL was back: before the live hosts "+
					"had been in touch for host.dead_after (%s)", n, after.Round(time.Millisecond), deadAfter)
			}
			if got[n] > 2 {
				t.Errorf("issue %d: agent given its prompt %d times, want 2 (on the dead host, then after the move)", n, got[n])
			}
		case move != nil:
			t.Errorf("issue %d: the run of live host %q moved: %s", n, held[n], move.Message)
		case held[n] == "beta" && got[n] == 1 && !fenced(evs):
			// The fence stopped its agent, but the agent had written .ace/DONE first: once the store answered, the
			// run's own visit took its work to a pull request before the fence's restart of it could (which then
			// found the run moved on). No second agent was needed.
		case held[n] == "beta" && (got[n] != 2 || !fenced(evs)):
			var b strings.Builder
			for _, ev := range evs {
				fmt.Fprintf(&b, "\n  %s %s %s: %s", ev.Time.Format("15:04:05.000"), ev.Step, ev.Kind, ev.Message)
			}
			t.Errorf("issue %d (host beta, fenced): agent given its prompt %d time(s), fenced %v: want 2, fenced (starts %v; "+
				"PostgreSQL went away at %s); its events:%s", n, got[n], fenced(evs), got, down.Format("15:04:05.000"), b.String())
		case held[n] != "beta" && got[n] != 1:
			t.Errorf("issue %d (host %q): agent given its prompt %d time(s), want 1 (starts %v)", n, held[n], got[n], got)
		}
		if r.FinishedAt != nil {
			finished[held[n]] = append(finished[held[n]], r.FinishedAt.Sub(back).Round(100*time.Millisecond))
		}
		status := 0
		for _, c := range in.GH.Comments(repo, n) {
			if strings.Contains(c.Body, workflow.StatusMarker) {
				status++
			}
		}
		if status != 1 {
			t.Errorf("issue %d has %d status comments, want 1", n, status)
		}
	}
	if !strings.Contains(live[1].out.String(), "cut off from the store") {
		t.Errorf("host beta, cut off for longer than half of host.dead_after, did not fence itself:\n%s", live[1].out)
	}
	if moved == 0 {
		t.Errorf("the dead host held no run when it died (runs by host %v)", held)
	}
	t.Logf("runs finished after PostgreSQL was back, by the host that held them when it went away: %v", finished)
	if prs := in.GH.PRs(repo); len(prs) != len(nums) {
		t.Errorf("%d pull requests, want %d", len(prs), len(nums))
	}
	for _, h := range live {
		h.terminate(t, "")
	}
	if t.Failed() {
		for _, h := range live {
			t.Logf("host %s said:\n%s", h.name, h.out)
		}
	}
}

// restart starts the host's `ace poll` again, with its configuration (name, root, tmux server) unchanged.
func (h *fleetHost) restart(t *testing.T) {
	t.Helper()
	cmd := exec.Command(h.cmd.Path, h.cmd.Args[1:]...)
	cmd.Env, cmd.Stdout, cmd.Stderr = h.cmd.Env, h.out, h.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h.cmd = cmd // the test's cleanup ends this one
}

// startsOf counts the prompts each issue's agent was given, from the lines the agents wrote to path.
func startsOf(t *testing.T, path string) map[int]int {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[int]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if n, err := strconv.Atoi(strings.TrimSpace(sc.Text())); err == nil {
			out[n]++
		}
	}
	return out
}

// doneAll is allDone that reports an error of the store instead of failing the test.
func doneAll(st *store.Store, nums []int) (bool, error) {
	runs, err := st.ListRuns(context.Background(), store.Filter{Repo: repo})
	if err != nil {
		return false, err
	}
	latest := map[int]*store.Run{}
	for _, r := range runs {
		latest[r.Issue] = r
	}
	for _, n := range nums {
		if r := latest[n]; r == nil || r.Status != store.StatusDone {
			return false, nil
		}
	}
	return true, nil
}

// fenced reports whether a run was started again after its host's fence stopped its agent.
func fenced(evs []store.Event) bool {
	return slices.ContainsFunc(evs, func(ev store.Event) bool { return ev.Kind == string(workflow.EventFenced) })
}
