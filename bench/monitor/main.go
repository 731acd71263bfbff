// Command monitor benchmarks watching many agents (BENCHMARKS.md, "Monitoring many sessions"), printing ace's
// figure beside the naive design's, both measured in the same run:
//
//	go run ./bench/monitor                      # 100 sessions, a line every 3 s each, 60 s per phase
//	go run ./bench/monitor -sessions 20 -duration 10s
//
// It starts N tmux sessions of ace's fake agent on a private socket, each printing one line every -every, and
// creates N runs at the monitor step in a fresh store. Then four phases of -duration each:
//
//   - idle: nothing watches; the tmux server's CPU is the floor that the monitors are measured against;
//   - ace: the real monitoring of `ace poll`: every run's job on the River queue over the real store, local
//     tracker and tmux client in control mode, looking at its agent then snoozing monitor.interval;
//   - naive: one full-history `capture-pane -p -S -` process per session every 0.5 s (the seed's design);
//   - idle again.
//
// Each monitor's cost is this process's CPU, plus its reaped children's (tmux clients), plus the tmux
// server's, minus the mean of the idle phases' server CPU; shown as a share of one core.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aceworks/ace/pkg/cli"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/procs"
	"github.com/aceworks/ace/pkg/secrets"
	"github.com/aceworks/ace/pkg/service"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tmuxops"
	"github.com/aceworks/ace/pkg/workflow"
)

func main() {
	// The panes run this binary again: as the secret-injecting launcher, then as the fake agent.
	if code, ok := cli.Child(os.Args[1:]); ok {
		os.Exit(code)
	}
	var o options
	flag.IntVar(&o.sessions, "sessions", 100, "agent sessions to watch")
	flag.DurationVar(&o.every, "every", 3*time.Second, "each agent prints one line this often")
	flag.DurationVar(&o.duration, "duration", 60*time.Second, "length of each phase")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the ace phase to `file`")
	flag.Parse()
	if err := run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type options struct {
	sessions   int
	every      time.Duration
	duration   time.Duration
	cpuProfile string
}

// cpu is CPU time consumed so far: this process, its reaped children, and the tmux server.
type cpu struct{ self, children, server time.Duration }

func (a cpu) sub(b cpu) cpu {
	return cpu{a.self - b.self, a.children - b.children, a.server - b.server}
}

func run(ctx context.Context, o options) error {
	dir, err := os.MkdirTemp("", "ace-bench-monitor-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	w, err := setup(ctx, dir, o)
	if err != nil {
		return err
	}
	defer w.close()
	fmt.Printf("monitoring %d sessions of the fake agent (one line every %s each), %s per phase, on %d CPUs\n",
		o.sessions, o.every, o.duration, runtime.NumCPU())

	// The idle floor is measured before and after the two monitors, and their mean subtracted: the tmux
	// server's own cost drifts a little on a shared machine.
	idle := func(ctx context.Context) error { <-ctx.Done(); return nil }
	idle1, err := w.measure(ctx, o.duration, idle)
	if err != nil {
		return err
	}
	var passes int
	stopProfile, err := startProfile(o.cpuProfile)
	if err != nil {
		return err
	}
	ace, err := w.measure(ctx, o.duration, func(ctx context.Context) error {
		n, err := w.ace(ctx)
		passes = n
		return err
	})
	stopProfile()
	if err != nil {
		return err
	}
	var naiveCaptures atomic.Int64
	naive, err := w.measure(ctx, o.duration, func(ctx context.Context) error { return w.naive(ctx, &naiveCaptures) })
	if err != nil {
		return err
	}
	idle2, err := w.measure(ctx, o.duration, idle)
	if err != nil {
		return err
	}
	pct := func(d time.Duration) float64 { return d.Seconds() / o.duration.Seconds() * 100 }
	floor := (idle1.server + idle2.server) / 2
	share := func(c cpu) (total, self, server float64) {
		server = pct(c.server - floor)
		self = pct(c.self + c.children)
		return self + server, self, server
	}
	nt, ns, nsv := share(naive)
	at, as, asv := share(ace)
	fmt.Printf("\n%-62s %8s %10s %10s\n", "extra CPU over the idle phases, % of one core", "total", "process", "tmux")
	fmt.Printf("%-62s %7.2f%% %9.2f%% %9.2f%%\n",
		fmt.Sprintf("naive: capture-pane -S - per session every 0.5s (%d captures)", naiveCaptures.Load()), nt, ns, nsv)
	fmt.Printf("%-62s %7.2f%% %9.2f%% %9.2f%%\n",
		fmt.Sprintf("ace: River jobs, control mode (%d visits, %d captures)", passes, w.captures.Load()), at, as, asv)
	fmt.Printf("idle phases: tmux server %.2f%% and %.2f%% of one core (their mean is the floor subtracted above)\n",
		pct(idle1.server), pct(idle2.server))
	ratio := nt / max(at, 0.001)
	verdict := "met"
	if at > 2 || ratio < 20 {
		verdict = "NOT met"
	}
	fmt.Printf("ace is %.0f× cheaper than naive; target ≤ 2%% of one core and ≥ 20× cheaper: %s\n", ratio, verdict)
	return nil
}

// startProfile starts a CPU profile to path ("" = none) and returns what stops it.
func startProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// world is the benchmark's ace installation and its sessions.
type world struct {
	o        options
	svc      *service.Service
	names    []string
	captures atomic.Int64
}

func setup(ctx context.Context, dir string, o options) (*world, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	trackerDir := filepath.Join(dir, "tracker")
	if err := os.MkdirAll(filepath.Join(trackerDir, "issues"), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(trackerDir, "repo.toml"),
		[]byte("name = \"bench/agents\"\nremote = \"unused.git\"\ndefault_branch = \"main\"\n"), 0o644); err != nil {
		return nil, err
	}
	cfg := config.Default()
	cfg.Workspace.Root = filepath.Join(dir, "root")
	cfg.Tracker = config.TrackerConfig{Kind: "local", Path: trackerDir}
	cfg.Agent.Default = "fake"
	cfg.Tmux.Socket = fmt.Sprintf("ace-bench-%d", os.Getpid())
	cfg.Sandbox.Mode = config.SandboxOff // what is measured here is the engine; bench/sandbox measures the box
	w := &world{o: o}
	w.svc, err = service.Open(ctx, service.Options{
		Config: cfg, Secrets: secrets.NewResolver(secrets.Options{}), Executable: exe, Watching: true,
		Tune: func(eo *workflow.Options) { eo.Sessions = countingSessions{eo.Sessions, &w.captures} },
	})
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	for i := 1; i <= o.sessions; i++ {
		name := tmuxops.SessionName("bench/agents", i)
		workdir := filepath.Join(dir, "work", strconv.Itoa(i))
		if err := os.MkdirAll(workdir, 0o755); err != nil {
			w.close()
			return nil, err
		}
		issue := fmt.Sprintf("+++\ntitle = \"agent %d\"\nlabels = [\"ace\"]\nstate = \"open\"\nauthor = \"you\"\n+++\nbench\n", i)
		if err := os.WriteFile(filepath.Join(trackerDir, "issues", strconv.Itoa(i)+".md"), []byte(issue), 0o644); err != nil {
			w.close()
			return nil, err
		}
		spec := tmuxops.SessionSpec{
			Name: name, Dir: workdir, Argv: []string{exe, "demo-agent", "--tick", o.every.String()},
			Width: cfg.Tmux.Width, Height: cfg.Tmux.Height, HistoryLimit: cfg.Tmux.HistoryLimit,
			LogPath: filepath.Join(cfg.Workspace.Root, "logs", name+".log"),
		}
		if err := w.svc.Tmux.NewSession(ctx, spec); err != nil {
			w.close()
			return nil, fmt.Errorf("start session %d: %w", i, err)
		}
		w.names = append(w.names, name)
		r := &store.Run{Repo: "bench/agents", Issue: i, Attempt: 1, Agent: "fake", Runner: "tmux",
			Step: string(workflow.StepMonitor), Status: store.StatusActive, Session: name, Workdir: workdir,
			State: store.RunState{MonitorSince: now, AgentState: store.AgentState{PromptDelivered: true}}, TriggeredAt: now}
		if err := w.svc.Store.CreateRun(ctx, r); err != nil {
			w.close()
			return nil, err
		}
		if err := w.svc.Queue.Enqueue(ctx, r); err != nil {
			w.close()
			return nil, err
		}
		// Spread the agents' lines over the period, as independent agents would be.
		time.Sleep(o.every / time.Duration(o.sessions))
	}
	return w, nil
}

func (w *world) close() {
	ctx := context.Background()
	if err := w.svc.Tmux.KillServer(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "bench: kill tmux server:", err)
	}
	_ = w.svc.Close()
}

// measure runs load for d and returns the CPU it and tmux consumed meanwhile.
func (w *world) measure(ctx context.Context, d time.Duration, load func(context.Context) error) (cpu, error) {
	pid, err := w.svc.Tmux.ServerPID(ctx)
	if err != nil {
		return cpu{}, err
	}
	before, err := sample(pid)
	if err != nil {
		return cpu{}, err
	}
	lctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	if err := load(lctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return cpu{}, err
	}
	after, err := sample(pid)
	if err != nil {
		return cpu{}, err
	}
	return after.sub(before), nil
}

// naive is the seed's monitor: a tmux process capturing each pane's whole history, every 0.5 s.
func (w *world) naive(ctx context.Context, captures *atomic.Int64) error {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		for _, name := range w.names {
			if ctx.Err() != nil {
				return nil
			}
			cmd := exec.Command("tmux", "-L", w.svc.Tmux.Socket(), "capture-pane", "-p", "-S", "-", "-t", "="+name+":")
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("naive capture of %s: %w", name, err)
			}
			captures.Add(1)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// ace is `ace poll`'s monitoring: every run's job on the real River queue over the real store, looking at its
// agent and snoozing monitor.interval, for the phase. It returns how many visits the runs got.
func (w *world) ace(ctx context.Context) (int, error) {
	events, unsubscribe := w.svc.Queue.Visits()
	defer unsubscribe()
	if err := w.svc.StartQueue(ctx); err != nil {
		return 0, err
	}
	visits := 0
	for {
		select {
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err := w.svc.Queue.Stop(sctx)
			// The control connection is a child process: closing it before the phase ends reaps it, so its CPU
			// is counted with this phase's children.
			w.svc.Tmux.Close()
			return visits, err
		case <-events:
			visits++
		}
	}
}

// countingSessions counts the screen captures the engine makes.
type countingSessions struct {
	workflow.Sessions
	n *atomic.Int64
}

func (c countingSessions) Capture(ctx context.Context, name string, historyLines int) (string, error) {
	c.n.Add(1)
	return c.Sessions.Capture(ctx, name, historyLines)
}

func sample(serverPID int) (cpu, error) {
	var self syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &self); err != nil {
		return cpu{}, err
	}
	server, err := procs.Read(serverPID)
	if err != nil {
		return cpu{}, err
	}
	return cpu{self: rusageCPU(self), children: childrenCPU(), server: server.CPU}, nil
}

func childrenCPU() time.Duration {
	var ch syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ch)
	return rusageCPU(ch)
}

func rusageCPU(r syscall.Rusage) time.Duration {
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}
