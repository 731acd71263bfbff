package service_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/fakegithub"
	"github.com/aceworks/ace/internal/pgtest"
	"github.com/aceworks/ace/internal/testkit"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tmuxops"
	"github.com/aceworks/ace/pkg/workflow"
)

// TestFleetFencesAHostCutOffFromTheStore cuts one host off from PostgreSQL (a TCP proxy between them that the
// test closes; the host's ace keeps running): before host.dead_after has passed it stops its own agents, so
// that when the other host moves its runs no issue ever has agents on two hosts at once (both hosts' agents
// sampled every 100 ms); the runs finish on the other host; when the proxy lets it through again, the host
// rejoins and takes new work.
func TestFleetFencesAHostCutOffFromTheStore(t *testing.T) {
	t.Parallel()
	pg := pgtest.URL(t)
	in := pgConfig(t, pg)
	script := scriptAgent(t, in, "busy 15s\n"+workScript) // agents still working when their host is cut off
	in.Cfg.Poll.MaxConcurrent = 2
	nums := labelIssues(in.GH, 2)
	st := openStoreAt(t, pg)

	u, err := url.Parse(pg)
	if err != nil {
		t.Fatal(err)
	}
	proxy := pgtest.NewProxy(t, u.Host)
	u.Host = proxy.Addr()
	cutCfg := *in.Cfg
	cutCfg.Store.URL = u.String()
	cut := startHost(t, &cutCfg, in.Exe, "cut")
	agents := func(h *fleetHost) []string {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		names, _ := tmuxops.New(h.cfg.Tmux.Socket).Sessions(ctx, "ace-")
		return names
	}
	testkit.WaitFor(t, "the host to be cut off runs both agents", 60*time.Second, func() bool { return len(agents(cut)) == 2 })
	survivor := startHost(t, in.Cfg, in.Exe, "survivor")

	// Sample both hosts' agents every 100 ms until the end: never one issue on both.
	var mu sync.Mutex
	var overlaps []string
	var cutAgentsGone time.Time
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			a, b := agents(cut), agents(survivor)
			mu.Lock()
			for _, s := range a {
				if strings.Contains(strings.Join(b, " "), s) {
					overlaps = append(overlaps, fmt.Sprintf("%s on both hosts at %s", s, time.Now().Format("15:04:05.000")))
				}
			}
			if len(a) == 0 && cutAgentsGone.IsZero() {
				cutAgentsGone = time.Now()
			}
			mu.Unlock()
		}
	}()
	cutAt := time.Now()
	proxy.Cut()
	// Once the cut-off host has stopped its agents, the agents after them (the moved runs, the next issue) only
	// have to finish: they need not keep busy.
	testkit.WaitFor(t, "the cut-off host to stop its agents", 60*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return !cutAgentsGone.IsZero()
	})
	if err := os.WriteFile(script, []byte(workScript), 0o644); err != nil {
		t.Fatal(err)
	}

	testkit.WaitFor(t, "every issue has its pull request", 150*time.Second, func() bool { return allDone(t, st, nums) })
	close(stop)
	<-sampled
	mu.Lock()
	defer mu.Unlock()
	for _, o := range overlaps {
		t.Error(o)
	}
	deadAfter := cut.cfg.Host.DeadAfter.Duration
	if cutAgentsGone.IsZero() || cutAgentsGone.Sub(cutAt) >= deadAfter {
		t.Errorf("the cut-off host's agents were gone %s after the cut, want before host.dead_after (%s)\n%s",
			cutAgentsGone.Sub(cutAt).Round(time.Millisecond), deadAfter, cut.out)
	}
	var firstMove time.Time
	for _, rs := range runsByIssue(t, st) {
		r := rs[len(rs)-1]
		if r.Host != "survivor" {
			t.Errorf("run #%d finished on %s, want the survivor", r.Issue, r.Host)
		}
		evs, err := st.Events(context.Background(), r.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if ev.Kind == string(workflow.EventMoved) && (firstMove.IsZero() || ev.Time.Before(firstMove)) {
				firstMove = ev.Time
			}
		}
	}
	if firstMove.IsZero() || !cutAgentsGone.Before(firstMove) {
		t.Errorf("agents gone on the cut-off host at %s, first run moved at %s: the host must stop its agents first",
			cutAgentsGone.Format("15:04:05.000"), firstMove.Format("15:04:05.000"))
	}
	if !strings.Contains(cut.out.String(), "cut off from the store") {
		t.Errorf("the cut-off host did not say it fenced itself:\n%s", cut.out)
	}
	if n := len(in.GH.PRs(repo)); n != len(nums) {
		t.Errorf("%d pull requests, want %d", n, len(nums))
	}
	t.Logf("cut at %s; its agents gone after %s; first run moved after %s", cutAt.Format("15:04:05.000"),
		cutAgentsGone.Sub(cutAt).Round(time.Millisecond), firstMove.Sub(cutAt).Round(time.Millisecond))

	// The proxy lets the host through again: it rejoins, and with the survivor gone it takes the next issue.
	restored := time.Now()
	proxy.Restore()
	testkit.WaitFor(t, "the cut-off host heartbeats again", 60*time.Second, func() bool {
		hs, err := st.Hosts(context.Background())
		if err != nil {
			return false
		}
		for _, h := range hs {
			if h.Name == "cut" && h.HeartbeatAt.After(restored) {
				return true
			}
		}
		return false
	})
	survivor.terminate(t, "")
	next := in.GH.AddIssue(repo, fakegithub.IssueOptions{Title: "After the cut", Author: "alice"})
	in.GH.Label(repo, next, "ace", "alice")
	testkit.WaitFor(t, "the rejoined host finishes the next issue", 90*time.Second, func() bool {
		r, err := st.LatestRun(context.Background(), repo, next)
		return err == nil && r.Status == store.StatusDone && r.Host == "cut"
	})
}
