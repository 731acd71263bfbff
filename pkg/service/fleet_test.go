package service_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/aceworks/ace/internal/fakegithub"
	"github.com/aceworks/ace/internal/pgtest"
	"github.com/aceworks/ace/internal/testkit"
	"github.com/aceworks/ace/internal/testkit/acetest"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tmuxops"
	"github.com/aceworks/ace/pkg/workflow"
)

// fleetHost is one ace host of a fleet: its own name, workspace root and tmux server, the shared store.
type fleetHost struct {
	name string
	cfg  *config.Config
	cmd  *exec.Cmd
	out  *testkit.Buffer
}

// startHost starts `ace poll` as host name over base's store, tracker and agent.
// terminate sends the host SIGTERM and checks that it exits cleanly within 5 s (why: what the test did to it).
func (h *fleetHost) terminate(t *testing.T, why string) {
	t.Helper()
	if err := h.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := h.cmd.Wait(); err != nil {
		t.Errorf("host %s after SIGTERM%s: %v\n%s", h.name, why, err, h.out)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("host %s took %s to exit after SIGTERM%s, want 5s at most", h.name, took.Round(time.Millisecond), why)
	}
}

func startHost(t *testing.T, base *config.Config, exe, name string, deadAfter ...time.Duration) *fleetHost {
	t.Helper()
	c := *base
	// Short, so that the tests of dead hosts are quick; a test about something else gives a longer one, which a
	// loaded machine's late heartbeats do not reach (they took a live host for dead in CI).
	dead := 10 * time.Second
	if len(deadAfter) > 0 {
		dead = deadAfter[0]
	}
	c.Host = config.HostConfig{Name: name, DeadAfter: config.D(dead)}
	dir := t.TempDir()
	c.Workspace.Root = filepath.Join(dir, "root")
	c.Tmux.Socket = fmt.Sprintf("ace-fleet-%s-%d", name, time.Now().UnixNano()%1e9)
	var b bytes.Buffer
	if err := toml.NewEncoder(&b).Encode(&c); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "ace.toml")
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	h := &fleetHost{name: name, cfg: &c, out: &testkit.Buffer{}}
	h.cmd = exec.Command(exe, "ace", "--config", path, "poll", "--interval", "300ms")
	h.cmd.Env = append(os.Environ(), "GITHUB_TOKEN="+botToken, "NO_COLOR=1")
	h.cmd.Stdout, h.cmd.Stderr = h.out, h.out
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.kill()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = tmuxops.New(c.Tmux.Socket).KillServer(ctx) // the host's agents, by PID
	})
	return h
}

// kill ends the host's ace at once (kill -9), as a machine that is lost.
func (h *fleetHost) kill() {
	if h.cmd.ProcessState == nil {
		_ = h.cmd.Process.Kill()
		_ = h.cmd.Wait()
	}
}

// scriptAgent makes the installation's agent the fake agent playing script, from the file at path (each agent
// reads it when it starts: a test may change the script for the agents that start later).
func scriptAgent(t *testing.T, in *acetest.Install, script string) (path string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "agent-script.txt")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	fake := in.Cfg.Agents["fake"]
	fake.Command = fmt.Sprintf("%s demo-agent --script %s", in.Exe, path)
	in.Cfg.Agents = map[string]config.AgentConfig{"fake": fake}
	return path
}

// labelIssues adds n labelled issues to the fake GitHub and returns their numbers (with the one pgConfig made).
func labelIssues(gh *fakegithub.Server, n int) []int {
	nums := []int{issue}
	for i := 1; i < n; i++ {
		num := gh.AddIssue(repo, fakegithub.IssueOptions{Title: fmt.Sprint("Greeting ", i), Author: "alice",
			Created: time.Now().Add(time.Duration(i) * time.Second)})
		gh.Label(repo, num, "ace", "alice")
		nums = append(nums, num)
	}
	return nums
}

func openStoreAt(t *testing.T, url string) *store.Store {
	t.Helper()
	st, err := store.OpenConfigured(context.Background(), url, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func runsByIssue(t *testing.T, st *store.Store) map[int][]*store.Run {
	t.Helper()
	runs, err := st.ListRuns(context.Background(), store.Filter{Repo: repo})
	if err != nil {
		t.Fatal(err)
	}
	by := map[int][]*store.Run{}
	for _, r := range runs {
		by[r.Issue] = append(by[r.Issue], r)
	}
	return by
}

func allDone(t *testing.T, st *store.Store, nums []int) bool {
	by := runsByIssue(t, st)
	for _, n := range nums {
		rs := by[n]
		if len(rs) == 0 || rs[len(rs)-1].Status != store.StatusDone {
			return false
		}
	}
	return true
}

// TestFleetStartsEachIssueOnceSpreadByLoad: three hosts (three `ace poll` processes, each with its own root and
// tmux server, poll.max_concurrent 6) over one PostgreSQL share eighteen labelled issues: every issue is started
// exactly once (one run, one agent start, one pull request), on one host; no host ever holds more runs than its
// max_concurrent, and the runs are spread over the hosts by their free slots. `ace hosts` lists the three, alive,
// and each host exits within 5 s of SIGTERM.
func TestFleetStartsEachIssueOnceSpreadByLoad(t *testing.T) {
	t.Parallel()
	const issues, perHost = 18, 6 // 3 hosts × 30 issues, with follow-through: TestFleetBoundsLiveAgents
	url := pgtest.URL(t)
	in := pgConfig(t, url)
	// Each agent writes its issue to starts.txt when it gets its prompt: an issue started twice writes it twice.
	starts := filepath.Join(t.TempDir(), "starts.txt")
	scriptAgent(t, in, fmt.Sprintf("sh echo \"$ACE_ISSUE\" >> %s\n%s", starts, workScript))
	in.Cfg.Poll.MaxConcurrent = perHost
	in.Cfg.PR.Follow = false // a run ends when its pull request opens
	nums := labelIssues(in.GH, issues)
	st := openStoreAt(t, url)
	var hosts []*fleetHost
	start := time.Now()
	for _, name := range []string{"alpha", "beta", "gamma"} {
		hosts = append(hosts, startHost(t, in.Cfg, in.Exe, name, time.Minute))
	}
	testkit.WaitFor(t, "every issue has its pull request", 4*time.Minute, func() bool { return allDone(t, st, nums) })
	t.Logf("%d issues to pull requests on 3 hosts in %s", issues, time.Since(start).Round(time.Millisecond))

	per := map[string]int{}
	var byHost = map[string][]*store.Run{}
	for n, rs := range runsByIssue(t, st) {
		if len(rs) != 1 {
			t.Errorf("issue %d has %d runs, want exactly 1", n, len(rs))
		}
		per[rs[0].Host]++
		byHost[rs[0].Host] = append(byHost[rs[0].Host], rs[0])
	}
	got := startsOf(t, starts)
	for _, n := range nums {
		if got[n] != 1 {
			t.Errorf("issue %d: agent given its prompt %d time(s), want 1", n, got[n])
		}
	}
	if len(in.GH.PRs(repo)) != len(nums) {
		t.Errorf("%d pull requests, want %d", len(in.GH.PRs(repo)), len(nums))
	}
	peaks := map[string]int{}
	for h, rs := range byHost {
		peaks[h] = peakConcurrent(rs)
	}
	t.Logf("runs per host: %v; most at once: %v", per, peaks)
	for _, h := range hosts {
		// Spread by free slots, three hosts alike get about a third each; a host given fewer than half of that was
		// passed over.
		if per[h.name] < issues/len(hosts)/2 {
			t.Errorf("host %s got %d runs (runs per host %v): dispatch does not spread by load", h.name, per[h.name], per)
		}
		if peaks[h.name] > perHost {
			t.Errorf("host %s held %d runs at once, over its poll.max_concurrent %d", h.name, peaks[h.name], perHost)
		}
	}
	out, err := exec.Command(in.Exe, "ace", "--config", filepath.Join(filepath.Dir(hosts[0].cfg.Workspace.Root), "ace.toml"),
		"hosts", "--json").Output()
	if err != nil {
		t.Fatalf("ace hosts: %v", err)
	}
	var listed struct {
		Hosts []struct {
			Name  string `json:"name"`
			Alive bool   `json:"alive"`
		} `json:"hosts"`
	}
	if err := json.Unmarshal(out, &listed); err != nil || len(listed.Hosts) != 3 || !listed.Hosts[0].Alive {
		t.Fatalf("ace hosts --json: %s (%v)", out, err)
	}
	for _, h := range hosts {
		h.terminate(t, "")
	}
}

// peakConcurrent is the most runs unfinished at once, from their creation to their end.
func peakConcurrent(runs []*store.Run) int {
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for _, r := range runs {
		edges = append(edges, edge{r.CreatedAt, 1})
		if r.FinishedAt != nil {
			edges = append(edges, edge{*r.FinishedAt, -1})
		}
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta // an end before a start at the same instant
	})
	n, peak := 0, 0
	for _, e := range edges {
		n += e.delta
		peak = max(peak, n)
	}
	return peak
}

// TestFleetMovesTheRunsOfADeadHost: a host killed mid-run (kill -9, its agents gone with it) goes silent; after
// host.dead_after its runs move to the live host, which finishes them: each issue gets its pull request, on the
// same status comment, and the move is in the run's events.
func TestFleetMovesTheRunsOfADeadHost(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	in := pgConfig(t, url)
	scriptAgent(t, in, "busy 4s\n"+workScript) // slow agents: the runs are still working when their host dies
	in.Cfg.Poll.MaxConcurrent = 2
	in.Cfg.PR.Follow = false
	nums := labelIssues(in.GH, 4)
	st := openStoreAt(t, url)

	doomed := startHost(t, in.Cfg, in.Exe, "doomed")
	testkit.WaitFor(t, "the doomed host holds runs", 60*time.Second, func() bool {
		rs, err := st.ListRuns(context.Background(), store.Filter{Host: "doomed", Statuses: []store.Status{store.StatusActive}})
		return err == nil && len(rs) > 0
	})
	survivor := startHost(t, in.Cfg, in.Exe, "survivor")
	doomed.kill()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	_ = tmuxops.New(doomed.cfg.Tmux.Socket).KillServer(ctx) // the machine is gone: its agents too
	cancel()

	// Generous: the survivor learns of the death after host.dead_after, and runs at most two agents at once.
	deadline := time.Now().Add(120 * time.Second)
	testkit.WaitFor(t, "every issue has its pull request", 150*time.Second, func() bool {
		if allDone(t, st, nums) {
			return true
		}
		if time.Now().After(deadline) {
			for _, rs := range runsByIssue(t, st) {
				r := rs[len(rs)-1]
				t.Logf("run #%d %s at %s (%q) on host %s", r.Issue, r.Status, r.Step, r.Error, r.Host)
				if r.Status != store.StatusDone {
					evs, _ := st.Events(context.Background(), r.ID)
					for _, ev := range evs {
						t.Logf("  %s %s: %s", ev.Time.Format("15:04:05.000"), ev.Kind, ev.Message)
					}
				}
			}
			hs, _ := st.Hosts(context.Background())
			t.Logf("hosts %+v", hs)
			t.Logf("the survivor said:\n%s", survivor.out)
			t.FailNow()
		}
		return false
	})
	moved := 0
	for _, rs := range runsByIssue(t, st) {
		r := rs[len(rs)-1]
		if r.Host != "survivor" {
			continue
		}
		evs, err := st.Events(context.Background(), r.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if ev.Kind == string(workflow.EventMoved) && strings.Contains(ev.Message, "host doomed stopped answering") {
				moved++
			}
		}
	}
	if moved == 0 {
		t.Fatalf("no run moved from the dead host to the survivor\n%s", survivor.out)
	}
	for _, n := range nums {
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
	if len(in.GH.PRs(repo)) != len(nums) {
		t.Errorf("%d pull requests, want %d", len(in.GH.PRs(repo)), len(nums))
	}
	t.Logf("%d run(s) moved from the dead host", moved)
}
