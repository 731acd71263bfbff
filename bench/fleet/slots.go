package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/aceworks/ace/bench/internal/benchkit"
	"github.com/aceworks/ace/internal/fakegithub"
	"github.com/aceworks/ace/internal/testkit"
	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// slotsPhase is figure 5: what idle agents cost a fleet's throughput. -slots-hosts hosts (`ace poll` processes, this
// binary run as ace) with poll.max_concurrent -slots-per-host each over one PostgreSQL get -slots-issues labelled
// issues at once, follow-through on and every pull request left open for review, as people do; one host is
// killed -9 (its tmux server with it: the machine is gone) -slots-kill after the labels. Measured until every
// issue has its pull request: issues a minute, and the oldest issue's wait — the longest any issue waited for a
// slot, labelled and not started, waiting on a host or stranded on the dead one, as `ace hosts` and /metrics say
// it, sampled every 250 ms — with pr.release_after as it comes (10m: idle agents give way when a run needs their
// slot), beside the same with "1s" (every agent stopped a second after its pull request opens), -slots-runs times
// each, in turns, in the same run; and the most live agents a host ran at once, counted from the process table.
func slotsPhase(ctx context.Context, w *world, o options) error {
	if o.slotsIssues == 0 {
		return nil
	}
	fmt.Printf("\n5. Idle agents and throughput: %d issues labelled at once on %d hosts (poll.max_concurrent %d each), "+
		"follow-through on, pull requests left open; host h%02d killed -9 %s after the labels (host.dead_after %s, "+
		"poll.interval %s; each agent works 1 s, then commits)\n", o.slotsIssues, o.slotsHosts, o.slotsPerHost, o.slotsHosts,
		o.slotsKill, slotsDeadAfter, slotsPoll)
	settings := []struct {
		name    string
		release time.Duration
	}{{"release_after 10m (default)", config.Default().PR.ReleaseAfter.Duration}, {`release_after "1s"`, time.Second}}
	// Each setting -slots-runs times, in turns (A B B A …), so that neither goes first on a machine whose load
	// changes: medians are shown, and each run's time beside the number of pull requests when the host was killed.
	res := make([][]slotsResult, len(settings))
	for i := range o.slotsRuns {
		for j := range settings {
			k := j
			if i%2 == 1 {
				k = len(settings) - 1 - j
			}
			r, err := slotsFleet(ctx, w, o, settings[k].release)
			if err != nil {
				return fmt.Errorf("%s: %w", settings[k].name, err)
			}
			res[k] = append(res[k], r)
		}
	}
	fmt.Printf("   %-46s %28s %28s\n", "", settings[0].name, settings[1].name)
	row := func(name string, f func(rs []slotsResult) string) {
		fmt.Printf("   %-46s %28s %28s\n", name, f(res[0]), f(res[1]))
	}
	med := func(rs []slotsResult, f func(slotsResult) time.Duration) time.Duration {
		var ds []time.Duration
		for _, r := range rs {
			ds = append(ds, f(r))
		}
		return pctl(ds, 50)
	}
	row(fmt.Sprintf("issues with a pull request (of %d), each run", o.slotsIssues), func(rs []slotsResult) string {
		return each(rs, func(r slotsResult) string { return fmt.Sprint(r.done) })
	})
	row("the first pull request after, each run", func(rs []slotsResult) string {
		return each(rs, func(r slotsResult) string { return r.first.Round(100 * time.Millisecond).String() })
	})
	row(fmt.Sprintf("pull requests when h%02d was killed, each run", o.slotsHosts), func(rs []slotsResult) string {
		return each(rs, func(r slotsResult) string { return fmt.Sprint(r.atKill) })
	})
	row("labels to the last pull request, each run", func(rs []slotsResult) string {
		return each(rs, func(r slotsResult) string { return r.took.Round(100 * time.Millisecond).String() })
	})
	row("issues a minute (median run)", func(rs []slotsResult) string {
		return fmt.Sprintf("%.1f", float64(o.slotsIssues)/med(rs, func(r slotsResult) time.Duration { return r.took }).Minutes())
	})
	row("the oldest issue's wait, longest seen (median)", func(rs []slotsResult) string {
		return med(rs, func(r slotsResult) time.Duration { return r.oldest }).Round(100 * time.Millisecond).String()
	})
	row("most live agents on a host at once", func(rs []slotsResult) string {
		peak := 0
		for _, r := range rs {
			peak = max(peak, r.peak)
		}
		return fmt.Sprintf("%d (of %d)", peak, o.slotsPerHost)
	})
	row("idle agents released, each run", func(rs []slotsResult) string {
		return each(rs, func(r slotsResult) string { return fmt.Sprint(r.released) })
	})
	return nil
}

// each is f of every run, joined: "28s, 31.2s".
func each(rs []slotsResult, f func(slotsResult) string) string {
	var out []string
	for _, r := range rs {
		out = append(out, f(r))
	}
	return strings.Join(out, ", ")
}

// The fleet of figure 5 is judged dead and dispatched at the pace the fleet tests use, not ace's defaults (2m):
// the figure is about slots, and a dead host's runs move only after host.dead_after.
const (
	slotsDeadAfter = 10 * time.Second
	slotsPoll      = time.Second
)

type slotsResult struct {
	done, atKill        int
	first, took, oldest time.Duration
	peak, released      int
}

// slotsFleet runs figure 5's fleet once, with pr.release_after release, in a database and a GitHub of its own.
func slotsFleet(ctx context.Context, w *world, o options, release time.Duration) (slotsResult, error) {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	url, err := w.pg.CreateDatabase(ctx)
	if err != nil {
		return slotsResult{}, err
	}
	dir, err := os.MkdirTemp(w.dir, "slots-")
	if err != nil {
		return slotsResult{}, err
	}
	gh := fakegithub.Start()
	defer gh.Stop()
	gh.AddUser("ace-bot", botToken)
	gh.AddUser("alice", humanToken)
	const repo = "bench/slots"
	remote := filepath.Join(dir, "slots.git")
	if err := benchkit.SeedRemote(ctx, filepath.Join(dir, "seed"), remote, "# slots benchmark\n"); err != nil {
		return slotsResult{}, err
	}
	gh.AddRepo(repo, fakegithub.RepoOptions{DefaultBranch: "main", CloneURL: remote})
	gh.SetGitDir(repo, remote)
	gh.SetPermission(repo, "alice", "write")
	script := filepath.Join(dir, "agent-script.txt")
	if err := os.WriteFile(script, []byte("busy 1s\nwrite work.txt done\\n\nsh git add work.txt && git commit -q -m \"bench work\"\n"+
		"done Wrote work.txt.\n"), 0o644); err != nil {
		return slotsResult{}, err
	}
	st, err := store.OpenPostgres(ctx, url+"&pool_max_conns=1")
	if err != nil {
		return slotsResult{}, err
	}
	defer st.Close()

	var hosts []*slotsHost
	defer func() {
		for _, h := range hosts {
			h.stop()
		}
	}()
	bySocket := map[string]string{}
	for i := 1; i <= o.slotsHosts; i++ {
		h, err := startSlotsHost(w, dir, url, gh.URL(), repo, script, i, o.slotsPerHost, release)
		if err != nil {
			return slotsResult{}, err
		}
		hosts = append(hosts, h)
		bySocket[h.socket] = h.name
	}
	if err := waitUntil(ctx, "the hosts heartbeat", func() (bool, error) {
		hs, err := st.Hosts(ctx)
		return len(hs) == o.slotsHosts, err
	}); err != nil {
		return slotsResult{}, fmt.Errorf("%w (see %s)", err, hosts[0].log.Name())
	}

	base := time.Now().Add(-time.Hour)
	for i := range o.slotsIssues {
		n := gh.AddIssue(repo, fakegithub.IssueOptions{Title: fmt.Sprintf("Slots task %d", i+1), Body: "Write work.txt.",
			Author: "alice", Created: base.Add(time.Duration(i) * time.Second)})
		gh.Label(repo, n, "ace", "alice")
	}
	start := time.Now()
	var r slotsResult
	killed := false
	for len(gh.PRs(repo)) < o.slotsIssues {
		if !killed && time.Since(start) >= o.slotsKill {
			hosts[len(hosts)-1].kill()
			killed, r.atKill = true, len(gh.PRs(repo))
		}
		if r.first == 0 && len(gh.PRs(repo)) > 0 {
			r.first = time.Since(start)
		}
		for _, issues := range testkit.LiveAgents(bySocket) {
			r.peak = max(r.peak, len(issues))
		}
		if f, err := workflow.ReadFleet(ctx, st, slotsDeadAfter, time.Now()); err == nil {
			if wait := f.Waiting(); wait.Issues() > 0 {
				r.oldest = max(r.oldest, time.Since(wait.Since))
			}
		}
		select {
		case <-ctx.Done():
			return slotsResult{}, fmt.Errorf("%d of %d pull requests after %s: %w", len(gh.PRs(repo)), o.slotsIssues,
				time.Since(start).Round(time.Second), ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
	r.took, r.done = time.Since(start), len(gh.PRs(repo))
	runs, err := st.ListRuns(ctx, store.Filter{})
	if err != nil {
		return slotsResult{}, err
	}
	for _, run := range runs {
		evs, err := st.Events(ctx, run.ID)
		if err != nil {
			return slotsResult{}, err
		}
		for _, ev := range evs {
			if ev.Kind == string(workflow.EventReleased) {
				r.released++
			}
		}
	}
	return r, nil
}

// slotsHost is one `ace poll` of figure 5: this binary run as ace, with its own root, tmux server and ace.toml; what
// it logs goes to <name>.log beside them (kept with -keep).
type slotsHost struct {
	name, socket string
	cmd          *exec.Cmd
	log          *os.File
}

func startSlotsHost(w *world, dir, url, ghURL, repo, script string, i, perHost int, release time.Duration) (*slotsHost, error) {
	h := &slotsHost{name: fmt.Sprintf("h%02d", i)}
	cfg := config.Default()
	cfg.Store.URL = url
	cfg.Host = config.HostConfig{Name: h.name, DeadAfter: config.D(slotsDeadAfter)}
	cfg.Workspace.Root = filepath.Join(dir, h.name)
	cfg.GitHub.APIURL = ghURL
	cfg.GitHub.Repos = []string{repo}
	cfg.GitHub.TokenEnv = []string{"GITHUB_TOKEN"}
	cfg.Agent.Default = "fake"
	cfg.Agents = map[string]config.AgentConfig{"fake": {Override: agents.Override{
		Command: fmt.Sprintf("%s demo-agent --script %s", benchkit.Quote(w.exe), benchkit.Quote(script)),
		Env: map[string]string{"GIT_AUTHOR_NAME": "fake agent", "GIT_AUTHOR_EMAIL": "agent@ace.invalid",
			"GIT_COMMITTER_NAME": "fake agent", "GIT_COMMITTER_EMAIL": "agent@ace.invalid"},
	}}}
	h.socket = fmt.Sprintf("ace-bench-slots-%d-%s", os.Getpid(), h.name)
	cfg.Tmux.Socket = h.socket
	cfg.Sandbox.Mode = config.SandboxOff
	cfg.Poll.Interval = config.D(slotsPoll)
	cfg.Poll.MaxConcurrent = perHost
	cfg.PR.Follow = true
	cfg.PR.ReleaseAfter = config.D(release)
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("figure 5 config: %w", err)
	}
	var b bytes.Buffer
	err := toml.NewEncoder(&b).Encode(cfg)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, h.name+".toml")
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		return nil, err
	}
	if h.log, err = os.Create(filepath.Join(dir, h.name+".log")); err != nil {
		return nil, err
	}
	h.cmd = exec.Command(w.exe, "ace", "--config", path, "poll")
	h.cmd.Env = append(os.Environ(), "GITHUB_TOKEN="+botToken, "NO_COLOR=1")
	h.cmd.Stdout, h.cmd.Stderr = h.log, h.log
	if err := h.cmd.Start(); err != nil {
		h.log.Close()
		return nil, err
	}
	return h, nil
}

// kill ends the host at once (kill -9) and its agents with its tmux server: a machine lost.
func (h *slotsHost) kill() {
	if h.cmd.ProcessState == nil {
		_ = h.cmd.Process.Kill()
		_ = h.cmd.Wait()
	}
	_ = exec.Command("tmux", "-L", h.socket, "kill-server").Run()
}

// stop ends a host still running with SIGTERM (then -9 after 10 s), and its agents with its tmux server.
func (h *slotsHost) stop() {
	if h.cmd.ProcessState == nil {
		_ = h.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = h.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = h.cmd.Process.Kill()
			<-done
		}
	}
	_ = exec.Command("tmux", "-L", h.socket, "kill-server").Run()
	h.log.Close()
}
