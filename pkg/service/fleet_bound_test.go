package service_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/pgtest"
	"github.com/aceworks/ace/internal/testkit"
	"github.com/aceworks/ace/pkg/tmuxops"
)

// TestFleetBoundsLiveAgents: three hosts with poll.max_concurrent 3 each over one PostgreSQL share twelve labelled
// issues with follow-through on, every pull request left open and pr.release_after as it comes (10 minutes), and
// one host is killed -9 with its agents mid-run. Every issue gets exactly one pull request — the agents idle on
// their open pull requests give way to the issues waiting and to the dead host's runs, instead of holding their
// hosts full — and no host ever runs more live agent processes than its max_concurrent, counted every 100 ms
// from the process table, not from ace's own records.
func TestFleetBoundsLiveAgents(t *testing.T) {
	t.Parallel()
	const issues, perHost = 12, 3
	pg := pgtest.URL(t)
	in := pgConfig(t, pg)
	st := openStoreAt(t, pg)
	scriptAgent(t, in, "busy 1s\n"+workScript)
	in.Cfg.Poll.MaxConcurrent = perHost
	in.Cfg.PR.Follow = true
	nums := labelIssues(in.GH, issues)

	var hosts []*fleetHost
	bySocket := map[string]string{}
	for _, name := range []string{"alpha", "beta", "gamma"} {
		h := startHost(t, in.Cfg, in.Exe, name)
		hosts = append(hosts, h)
		bySocket[h.cfg.Tmux.Socket] = name
	}
	var mu sync.Mutex
	peak := map[string]int{}
	samples := 0
	var over []string // what the sampler saw each time a host ran more than its slots
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			live := testkit.LiveAgents(bySocket)
			mu.Lock()
			samples++
			for h, issues := range live {
				peak[h] = max(peak[h], len(issues))
				if len(issues) > perHost {
					over = append(over, fmt.Sprintf("%s: host %s runs agents for issues %v",
						time.Now().Format("15:04:05.000"), h, issues))
				}
			}
			mu.Unlock()
		}
	}()

	start := time.Now()
	testkit.WaitFor(t, "a third of the issues have their pull requests", 4*time.Minute, func() bool {
		return len(in.GH.PRs(repo)) >= issues/3
	})
	killedAt := time.Since(start)
	doomed := hosts[2]
	doomed.kill()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	_ = tmuxops.New(doomed.cfg.Tmux.Socket).KillServer(ctx) // the machine is gone: its agents too
	cancel()
	testkit.WaitFor(t, "every issue has its pull request", 4*time.Minute, func() bool { return len(in.GH.PRs(repo)) >= issues })
	close(stop)
	<-sampled
	t.Logf("%d issues to pull requests on 3 hosts (one killed after %s) in %s; most live agents at once, over %d samples: %v",
		issues, killedAt.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), samples, peak)

	heads := map[string]int{}
	for _, pr := range in.GH.PRs(repo) {
		heads[pr.Head]++
	}
	if len(heads) != len(nums) {
		t.Errorf("%d pull requests on %d branches for %d issues, want one each", len(in.GH.PRs(repo)), len(heads), len(nums))
	}
	for h, n := range peak {
		if n > perHost {
			t.Errorf("host %s ran %d agents at once, over its poll.max_concurrent %d", h, n, perHost)
		}
	}
	if len(over) > 0 {
		for _, o := range over {
			t.Log(o)
		}
		for n, rs := range runsByIssue(t, st) {
			for _, r := range rs {
				evs, _ := st.Events(context.Background(), r.ID)
				var b strings.Builder
				for _, ev := range evs {
					fmt.Fprintf(&b, "\n    %s %s %s: %s", ev.Time.Format("15:04:05.000"), ev.Step, ev.Kind, ev.Message)
				}
				t.Logf("issue %d run %d on %s, %s at %s:%s", n, r.ID, r.Host, r.Status, r.Step, b.String())
			}
		}
	}
	if peak["alpha"] == 0 || peak["beta"] == 0 {
		t.Errorf("the sampler saw no agents on the live hosts (%v): it counts nothing", peak)
	}
	for _, h := range hosts[:2] {
		h.terminate(t, "")
	}
}
