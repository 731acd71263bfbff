package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/fakegithub"
	"github.com/aceworks/ace/internal/testkit/acetest"
	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/procs"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tmuxops"
	"github.com/aceworks/ace/pkg/workflow"
)

// The crash-and-restart soak. One ace (`ace poll`, this test binary as ace) works labelled issues with the fake
// agent behind each runner and is SIGKILLed at random moments (seeded); with the tmux and live runners, every
// other kill waits for ace's control connection and comes while tmux holds output for it (what a dead reader
// never drains: the state that left clients behind). After
// some kills someone runs `tmux kill-server`; after others the host "restarts" (every process of the
// installation, tmux and agents included, is SIGKILLed); after others an ace of an older release has left its
// control client behind and `tmux kill-server` half-exits the server, which the next ace must recover before
// it does anything else. After each kill the dead ace's control client must be gone and a killed server must
// have exited; at the end every issue has one done run and one pull request, no run met a tmux error, and nothing
// of a dead ace is left: no process, tmux session, socket or runtime file (env files hold secrets).
//
// In the normal suite it kills twice per runner (each kind of kill among them). ACE_SOAK_KILLS=N spreads N kills
// over the three runners; ACE_SOAK_SEED reproduces a soak's moments.

// soakKill is what follows a kill of ace.
type soakKill int

const (
	killOnly soakKill = iota
	killServer
	hostRestart
	oldOrphan // an older ace's control client left behind, then kill-server: the server half-exits
	soakKinds
)

// soakFigures is what one runner's soak counted.
type soakFigures struct {
	Runner                               string
	Kills, Floods, KillServers, Restarts int
	OldOrphans, Recovered                int // servers half-exited by an older ace's client; recovered by the next
	Runs, Issues, PRs                    int
	Orphans, HalfExited                  int // control clients of killed aces still there; servers that did not exit
	TmuxErrors, Failed, RunEvents        int // step errors naming tmux; runs not done; tmux events on runs
	HostStarts, Counted                  int // agents started again for the host's doing; restarts counted
	Left                                 []string
}

func (f soakFigures) String() string {
	return fmt.Sprintf("%s: %d kills (%d while tmux held output for ace's control client; then %d tmux kill-server, "+
		"%d host restarts, %d servers half-exited by an older ace's client, %d of them recovered by the next ace), "+
		"%d issues, %d runs, %d pull requests; %d orphaned control clients, %d servers that did not exit, "+
		"%d step errors on tmux, %d runs not done, %d left behind; %d tmux events on runs; %d agents started again "+
		"for the host's doing, %d restarts counted against monitor.max_restarts",
		f.Runner, f.Kills, f.Floods, f.KillServers, f.Restarts, f.OldOrphans, f.Recovered, f.Issues, f.Runs, f.PRs,
		f.Orphans, f.HalfExited, f.TmuxErrors, f.Failed, len(f.Left), f.RunEvents, f.HostStarts, f.Counted)
}

func TestCrashRestartSoak(t *testing.T) {
	t.Parallel()
	kills, seed := 6, time.Now().UnixNano()
	if s := os.Getenv("ACE_SOAK_KILLS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("ACE_SOAK_KILLS=%q: want a positive number", s)
		}
		kills = n
	}
	if s := os.Getenv("ACE_SOAK_SEED"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("ACE_SOAK_SEED=%q: %v", s, err)
		}
		seed = n
	}
	t.Logf("soak seed %d (ACE_SOAK_SEED=%d reproduces its moments), %d kills", seed, seed, kills)
	var mu sync.Mutex
	var figs []soakFigures
	t.Cleanup(func() {
		var total soakFigures
		total.Runner = "all"
		for _, f := range figs {
			t.Log("soak " + f.String())
			total.Kills, total.KillServers, total.Restarts = total.Kills+f.Kills, total.KillServers+f.KillServers, total.Restarts+f.Restarts
			total.Floods, total.OldOrphans, total.Recovered = total.Floods+f.Floods, total.OldOrphans+f.OldOrphans, total.Recovered+f.Recovered
			total.Issues, total.Runs, total.PRs = total.Issues+f.Issues, total.Runs+f.Runs, total.PRs+f.PRs
			total.Orphans, total.HalfExited = total.Orphans+f.Orphans, total.HalfExited+f.HalfExited
			total.TmuxErrors, total.Failed, total.RunEvents = total.TmuxErrors+f.TmuxErrors, total.Failed+f.Failed, total.RunEvents+f.RunEvents
			total.HostStarts, total.Counted = total.HostStarts+f.HostStarts, total.Counted+f.Counted
			total.Left = append(total.Left, f.Left...)
		}
		t.Logf("soak %s (seed %d)", total, seed)
	})
	for i, runner := range []string{"tmux", "exec", "live"} {
		n := kills / 3
		if i < kills%3 {
			n++
		}
		t.Run(runner, func(t *testing.T) {
			t.Parallel()
			s := newSoak(t, runner, n, uint64(seed), uint64(i))
			s.run()
			mu.Lock()
			figs = append(figs, s.fig)
			mu.Unlock()
		})
	}
}

// soak is one runner's installation and the ace processes it kills.
type soak struct {
	t      *testing.T
	runner string
	in     *acetest.Install
	cfg    *config.Config
	env    []string
	st     *store.Store
	rng    *rand.Rand
	turn   int // which disruption the first kills take, so that a short soak has each
	kills  int
	aces   int
	fig    soakFigures
	// recover says the next ace must first recover a server an older ace's client left half-exited.
	recover bool
}

func newSoak(t *testing.T, runner string, kills int, seed, stream uint64) *soak {
	in := acetest.New(t, workScript)
	cfg := in.Cfg
	cfg.Sandbox.Mode = config.SandboxOff // the fake agent keeps its files beside the test's
	cfg.Poll.MaxConcurrent = 3
	cfg.Monitor.IdleAfter = config.D(30 * time.Second)
	// Every kill-server and host restart takes the running agents with it: ace starts them again without
	// spending monitor.max_restarts (the budget for agents that crash by themselves), which keeps its default.
	fake := cfg.Agents["fake"]
	fake.Secrets = []string{"FAKE_AGENT_KEY"} // an env file with a secret for every start
	env := []string{"GITHUB_TOKEN=" + botToken, "FAKE_AGENT_KEY=fake-agent-secret-value-42", "ANTHROPIC_API_KEY=sk-ant-test-not-a-key"}
	// The headless and live fakes keep their place in the script per working copy: a conversation resumed by a
	// new process goes on where the killed one was.
	state := " --state .ace/fake.state"
	switch runner {
	case "exec":
		base := strings.Replace(fake.Command, " demo-agent ", " demo-agent headless --format claude ", 1) + state
		fake.Runner, fake.HeadlessFormat, fake.Headless, fake.HeadlessResume = "exec", "claude", base, base+" --resume {session_id}"
	case "live":
		// runner "live" is claude's protocol: a `claude` on the ace processes' PATH is the fake speaking it.
		bin := filepath.Join(in.Dir, "bin")
		shim := fmt.Sprintf("#!/bin/sh\nexec %s demo-agent live --script %s --record %s%s \"$@\"\n", in.Exe, in.Script, in.Record, state)
		if err := os.MkdirAll(bin, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(bin, "claude"), []byte(shim), 0o755); err != nil {
			t.Fatal(err)
		}
		env = append(env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		cfg.Agents["claude"] = config.AgentConfig{Override: agents.Override{Command: fake.Command, Env: fake.Env, Secrets: fake.Secrets, Runner: "live"}}
		cfg.Agent.Default = "claude"
	}
	cfg.Agents["fake"] = fake
	s := &soak{t: t, runner: runner, in: in, cfg: cfg, env: env, kills: kills, turn: int(stream),
		rng: rand.New(rand.NewPCG(seed, stream)), fig: soakFigures{Runner: runner}}
	// Enough issues that a run is under way at most kills, and the last ones still run when the kills end.
	s.fig.Issues = max(2, kills/4+1)
	for i := 1; i < s.fig.Issues; i++ {
		n := in.GH.AddIssue(testRepo, fakegithub.IssueOptions{Title: fmt.Sprint("issue ", i), Body: "Please add GREETING.md.", Author: "alice"})
		in.GH.Label(testRepo, n, "ace", "alice")
	}
	if err := os.MkdirAll(cfg.Workspace.Root, 0o700); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), filepath.Join(cfg.Workspace.Root, "ace.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.endAll() // whatever a failed soak left running
		_ = st.Close()
	})
	s.st = st
	return s
}

// aceProc is one `ace poll` of the soak, its output in a file of its own.
type aceProc struct {
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
}

func (s *soak) startAce() *aceProc {
	s.t.Helper()
	s.aces++
	log := filepath.Join(s.in.Dir, fmt.Sprintf("ace-%d.log", s.aces))
	f, err := os.Create(log)
	if err != nil {
		s.t.Fatal(err)
	}
	defer f.Close()
	cmd := aceCommand(s.t, s.in.Exe, filepath.Join(s.in.Dir, "ace.toml"), s.cfg, s.env, "poll")
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	p := &aceProc{cmd: cmd, log: log, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	return p
}

// tail is the end of an ace's output.
func (p *aceProc) tail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

func (s *soak) run() {
	t := s.t
	for k := range s.kills {
		p := s.startAce()
		s.recovered(p)
		d := 200*time.Millisecond + time.Duration(s.rng.Int64N(int64(3800*time.Millisecond)))
		select {
		case <-p.exited:
			t.Fatalf("kill %d: ace exited by itself:\n%s", k+1, p.tail())
		case <-time.After(d):
		}
		flooded := false
		if s.runner != "exec" && ((k < 4 && k%2 == 0) || (k >= 4 && s.rng.IntN(2) == 0)) {
			// Once ace has its control connection (it opens one when it has agents to watch), tmux gets output
			// for it, which streams meanwhile: ace reads it only with its next command.
			name := tmuxops.ControlPrefix + strconv.Itoa(p.cmd.Process.Pid)
			for wait := time.Now().Add(10 * time.Second); !s.hasSession(name) && time.Now().Before(wait); {
				time.Sleep(20 * time.Millisecond)
			}
			if flooded = s.flood(name); flooded {
				time.Sleep(50 * time.Millisecond)
			}
		}
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.exited
		s.fig.Kills++
		s.controlClientGone(p.cmd.Process.Pid)
		kind := s.disruption(k)
		t.Logf("kill %d at %s: ace %d (%s), flooded %v, then %s", k+1, time.Now().Format("15:04:05.000"),
			p.cmd.Process.Pid, filepath.Base(p.log), flooded, [...]string{"nothing", "kill-server", "host restart", "an older ace's orphan and kill-server"}[kind])
		switch kind {
		case killServer:
			s.killServer()
		case hostRestart:
			s.restartHost()
		case oldOrphan:
			s.leaveOldOrphan()
		}
	}
	final := s.startAce()
	s.recovered(final)
	ctx := context.Background()
	// A bound for a hung soak only: the machine may be loaded.
	deadline := time.Now().Add(2*time.Minute + time.Duration(s.fig.Issues)*20*time.Second)
	for !s.allDone(ctx) {
		select {
		case <-final.exited:
			t.Fatalf("the last ace exited by itself:\n%s", final.tail())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = final.cmd.Process.Signal(syscall.SIGTERM)
			<-final.exited
			t.Fatalf("after %d kills not every run is done: %s\nthe last ace:\n%s", s.fig.Kills, s.runsSeen(ctx), final.tail())
		}
	}
	_ = final.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-final.exited:
	case <-time.After(time.Minute):
		_ = final.cmd.Process.Kill()
		<-final.exited
		t.Errorf("the last ace did not stop within a minute of SIGTERM:\n%s", final.tail())
	}
	s.verify(ctx)
}

// recoveredNote is what ace logs when it has ended a server an older ace's client left half-exited.
const recoveredNote = "refused every client"

// recovered checks, when the last kill left the server half-exited, that ace p recovers it first thing.
func (s *soak) recovered(p *aceProc) {
	if !s.recover {
		return
	}
	s.recover = false
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(p.tail(), recoveredNote) {
		if time.Now().After(deadline) {
			s.t.Errorf("the ace started after an older ace's client half-exited the server did not recover it:\n%s", p.tail())
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.fig.Recovered++
}

// disruption is what follows kill k: the first two kills of each runner take two kinds, which depend on the
// runner, so that a short soak has each kind; the others are drawn: mostly a plain kill.
func (s *soak) disruption(k int) soakKill {
	if k < 2 {
		return soakKill((k + 2*s.turn) % int(soakKinds))
	}
	switch x := s.rng.IntN(100); {
	case x < 20:
		return killServer
	case x < 30:
		return hostRestart
	case x < 35:
		return oldOrphan
	}
	return killOnly
}

// controlClientGone checks that the killed ace's tmux control client went with it.
func (s *soak) controlClientGone(pid int) {
	name := tmuxops.ControlPrefix + strconv.Itoa(pid)
	deadline := time.Now().Add(5 * time.Second)
	for len(s.controlClients(name)) > 0 {
		if time.Now().After(deadline) {
			s.fig.Orphans++
			s.t.Errorf("the control client %v of killed ace %d is still there 5 s after it", s.controlClients(name), pid)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// controlClients are the live tmux clients of the soak's socket attached to control session name.
func (s *soak) controlClients(name string) []int {
	var out []int
	for _, p := range procs.All() {
		argv := procs.Cmdline(p)
		if procs.Comm(p) == "tmux: client" && slices.Contains(argv, s.cfg.Tmux.Socket) && slices.Contains(argv, name) && procs.Alive(p) {
			out = append(out, p)
		}
	}
	return out
}

// killServer runs `tmux kill-server` as anyone tidying up would, and checks that the server exits: one held
// half-exited refuses every later ace.
func (s *soak) killServer() {
	s.fig.KillServers++
	_ = exec.Command("tmux", "-L", s.cfg.Tmux.Socket, "kill-server").Run()
	deadline := time.Now().Add(5 * time.Second)
	for len(procs.Listeners(s.tmuxSocket())) > 0 {
		if time.Now().After(deadline) {
			s.fig.HalfExited++
			out, _ := exec.Command("tmux", "-L", s.cfg.Tmux.Socket, "ls").CombinedOutput()
			s.t.Errorf("the tmux server has not exited 5 s after kill-server (tmux ls: %s)", bytes.TrimSpace(out))
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *soak) tmuxSocket() string {
	dir := os.Getenv("TMUX_TMPDIR")
	if dir == "" {
		dir = "/tmp"
	}
	return filepath.Join(dir, "tmux-"+strconv.Itoa(os.Getuid()), s.cfg.Tmux.Socket)
}

// restartHost is a reboot as far as ace can tell: every process of the installation — the tmux server and its
// panes, headless supervisors, agents, live hosts — is SIGKILLed at once. Its files stay.
func (s *soak) restartHost() {
	s.fig.Restarts++
	if left := s.endAll(); len(left) > 0 {
		s.t.Errorf("processes survived the host restart: %v", left)
	}
}

func (s *soak) hasSession(name string) bool {
	return exec.Command("tmux", "-L", s.cfg.Tmux.Socket, "has-session", "-t", "="+name).Run() == nil
}

// flood has tmux hold output for the control client of session name, if there is one: the session's `cat`
// echoes 100 KB, more than a pipe holds, to an ace about to be killed.
func (s *soak) flood(name string) bool {
	path := filepath.Join(s.in.Dir, "flood.txt")
	if _, err := os.Stat(path); err != nil {
		text := strings.Repeat(strings.Repeat("x", 99)+"\n", 1000)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			s.t.Fatal(err)
		}
	}
	err := exec.Command("tmux", "-L", s.cfg.Tmux.Socket, "load-buffer", path, ";", "paste-buffer", "-t", "="+name+":").Run()
	if err == nil {
		s.fig.Floods++
	}
	return err == nil
}

// leaveOldOrphan is what an ace of an older release left when it was killed: its control client, a tmux -C
// client whose ace is gone, still attached because tmux holds output for it that nobody reads. Then `tmux
// kill-server` half-exits the server, which refuses every client until the next ace recovers it.
func (s *soak) leaveOldOrphan() {
	t := s.t
	ghost := exec.Command("true") // the older ace, gone
	if err := ghost.Run(); err != nil {
		t.Fatal(err)
	}
	name := tmuxops.ControlPrefix + strconv.Itoa(ghost.Process.Pid)
	cmd := exec.Command("tmux", "-L", s.cfg.Tmux.Socket, "-f", "/dev/null", "-C", "new-session", "-A", "-s", name, "-x", "20", "-y", "5", "cat")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait() }() // reaped whoever ends it
	attached := make(chan bool, 1)
	go func() {
		br := bufio.NewReader(out)
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				attached <- false
				return
			}
			if strings.HasPrefix(l, "%session-changed") {
				attached <- true
				return
			}
		}
	}()
	select {
	case ok := <-attached:
		if !ok {
			t.Fatal("the older ace's control client did not attach")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the older ace's control client did not attach within 10 s")
	}
	if !s.flood(name) {
		t.Fatalf("could not flood %s", name)
	}
	s.fig.Floods-- // not an ace of this soak
	// Its reader reads no more: the echo fills the pipe and tmux holds the rest. Then the reader dies.
	time.Sleep(300 * time.Millisecond)
	_ = in.Close()
	_ = out.Close()
	time.Sleep(200 * time.Millisecond)
	if !procs.Alive(cmd.Process.Pid) {
		// It read its input's end before tmux held output for it (a loaded machine's scheduling): an older ace
		// that left nothing behind. The kill goes on as a plain kill-server, which must leave no server either.
		t.Logf("the older ace's control client exited by itself before it held the server: a plain kill-server instead")
		s.killServer()
		return
	}
	_ = exec.Command("tmux", "-L", s.cfg.Tmux.Socket, "kill-server").Run()
	out2, _ := exec.Command("tmux", "-L", s.cfg.Tmux.Socket, "ls").CombinedOutput()
	if !strings.Contains(string(out2), "server exited unexpectedly") {
		t.Fatalf("kill-server did not half-exit the server: tmux ls says %q", out2)
	}
	s.fig.OldOrphans++
	s.recover = true
}

// ours are the live processes of this installation: those whose command line names its directory or its tmux
// socket (the test process aside).
func (s *soak) ours() []int {
	var out []int
	for _, p := range procs.All() {
		if p == os.Getpid() || !procs.Alive(p) {
			continue
		}
		for _, a := range procs.Cmdline(p) {
			if strings.Contains(a, s.in.Dir) || a == s.cfg.Tmux.Socket {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// endAll SIGKILLs every process of the installation, a few times over for those started meanwhile, and returns
// what is still there.
func (s *soak) endAll() []string {
	for range 5 {
		pids := s.ours()
		if len(pids) == 0 {
			return nil
		}
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		deadline := time.Now().Add(2 * time.Second)
		for slices.ContainsFunc(pids, procs.Alive) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	var left []string
	for _, p := range s.ours() {
		left = append(left, fmt.Sprintf("%d %q", p, procs.Cmdline(p)))
	}
	return left
}

// allDone reports whether every issue's latest run is finished.
func (s *soak) allDone(ctx context.Context) bool {
	runs, err := s.st.ListRuns(ctx, store.Filter{Repo: testRepo})
	if err != nil {
		return false
	}
	latest := store.LatestPerIssue(runs)
	if len(latest) < s.fig.Issues {
		return false
	}
	for _, r := range latest {
		if !r.Status.Terminal() {
			return false
		}
	}
	return true
}

func (s *soak) runsSeen(ctx context.Context) string {
	runs, _ := s.st.ListRuns(ctx, store.Filter{Repo: testRepo})
	var b strings.Builder
	for _, r := range runs {
		fmt.Fprintf(&b, "\n  #%d attempt %d: %s at %s (%s)", r.Issue, r.Attempt, r.Status, r.Step, r.Error)
	}
	return b.String()
}

// verify checks the end state: every issue done once with one pull request, no tmux error on the way, and
// nothing of a dead ace left.
func (s *soak) verify(ctx context.Context) {
	t := s.t
	runs, err := s.st.ListRuns(ctx, store.Filter{Repo: testRepo})
	if err != nil {
		t.Fatal(err)
	}
	s.fig.Runs = len(runs)
	perIssue := map[int]int{}
	for _, r := range runs {
		perIssue[r.Issue]++
		s.fig.Counted += r.Restarts
		if r.Status != store.StatusDone {
			s.fig.Failed++
			t.Errorf("#%d attempt %d ended %s at %s: %s", r.Issue, r.Attempt, r.Status, r.Step, r.Error)
		}
		if r.Runner != s.runner {
			t.Errorf("#%d ran on runner %s, want %s", r.Issue, r.Runner, s.runner)
		}
		evs, err := s.st.Events(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			switch {
			case ev.Kind == string(workflow.EventTmux):
				s.fig.RunEvents++
			case ev.Kind == string(workflow.EventAgentExited) && strings.Contains(ev.Data, `"cause":"host"`):
				s.fig.HostStarts++
			case (ev.Kind == "retry" || ev.Kind == "error") && strings.Contains(ev.Message, "tmux"):
				s.fig.TmuxErrors++
				t.Errorf("#%d: a step failed on tmux: %s", r.Issue, ev.Message)
			}
		}
	}
	for issue, n := range perIssue {
		if n != 1 {
			t.Errorf("#%d has %d runs, want one", issue, n)
		}
	}
	heads := map[string]int{}
	for _, pr := range s.in.GH.PRs(testRepo) {
		heads[pr.Head]++
		s.fig.PRs++
	}
	if s.fig.PRs != s.fig.Issues || len(heads) != s.fig.Issues {
		t.Errorf("%d pull requests on %d branches for %d issues, want one each: %v", s.fig.PRs, len(heads), s.fig.Issues, heads)
	}
	s.fig.Left = s.leftovers()
	for _, l := range s.fig.Left {
		t.Errorf("left behind: %s", l)
	}
}

// leftovers is what is left of the installation's processes once every run is done and the last ace has
// stopped: processes, tmux sessions, sockets and runtime files.
func (s *soak) leftovers() []string {
	var left []string
	// What the last ace ended as it stopped (its control session, a done run's agent) may take a moment to go.
	for deadline := time.Now().Add(10 * time.Second); len(s.ours()) > 0 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	for _, p := range s.ours() {
		left = append(left, fmt.Sprintf("process %d %q", p, procs.Cmdline(p)))
	}
	if out, err := exec.Command("tmux", "-L", s.cfg.Tmux.Socket, "ls", "-F", "#{session_name}").CombinedOutput(); err == nil {
		for _, name := range strings.Fields(string(out)) {
			left = append(left, "tmux session "+name)
		}
	}
	root := s.cfg.Workspace.Root
	for _, pattern := range []string{"env-*", "headless-*.json"} {
		files, _ := filepath.Glob(filepath.Join(root, "run", pattern))
		for _, f := range files {
			left = append(left, "runtime file "+f)
		}
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSocket != 0 {
			left = append(left, "socket "+path)
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.t.Errorf("walk %s: %v", root, err)
	}
	return left
}
