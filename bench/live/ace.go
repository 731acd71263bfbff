package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/aceworks/ace/pkg/atomicfile"
	"github.com/aceworks/ace/pkg/cli"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/secrets"
	"github.com/aceworks/ace/pkg/service"
	"github.com/aceworks/ace/pkg/workflow"
)

// The benchmark's own child programs, besides ace's (cli.Child).
const (
	// aceArg runs ace as `ace poll` does, for one world: `BENCH __bench-ace SPECFILE`.
	aceArg = "__bench-ace"
	// helperArg runs one of ace's helper programs and records its CPU when it exits:
	// `BENCH __bench-helper RECORDS __headless|__live ARGS…`.
	helperArg = "__bench-helper"
)

// child runs this binary as one of the programs the benchmark or ace starts, if args name one.
func child(args []string) (int, bool) {
	if len(args) > 0 {
		switch args[0] {
		case aceArg:
			return aceMain(args[1:]), true
		case helperArg:
			return helperMain(args[1:]), true
		}
	}
	return cli.Child(args)
}

// aceSpec is what the ace process of a world is given.
type aceSpec struct {
	Root    string        `json:"root"`    // the workspace root
	Runner  string        `json:"runner"`  // tmux, exec or live
	CLI     string        `json:"cli"`     // claude, codex or gemini
	GitHub  string        `json:"github"`  // the fake GitHub's API URL
	Socket  string        `json:"socket"`  // ace's tmux socket
	Records string        `json:"records"` // where the helpers record their CPU
	CPU     string        `json:"cpu"`     // where ace writes its own CPU when asked (SIGUSR1)
	Poll    time.Duration `json:"poll"`    // poll.interval
	Timeout time.Duration `json:"timeout"` // monitor.timeout
}

// aceConfig is the world's ace.toml: the real-CLI cases' (e2e newRealWorld), the runner chosen,
// auto_approve on where the CLI asks for permissions (the question is what is measured), poll.interval and
// monitor.interval the spec's, and runs that end when their pull request opens.
func aceConfig(s aceSpec) (*config.Config, error) {
	toml := fmt.Sprintf("[agent]\ndefault = %q\n\n[agents.%s]\n", s.CLI, s.CLI)
	if s.Runner != "tmux" {
		toml += fmt.Sprintf("runner = %q\n", s.Runner)
	}
	if s.Runner != "exec" {
		toml += "auto_approve = true\n"
	}
	cfg, err := config.Parse("ace.toml", []byte(toml))
	if err != nil {
		return nil, fmt.Errorf("ace.toml: %w", err)
	}
	cfg.Workspace.Root = s.Root
	cfg.Tracker.Kind = "github"
	cfg.GitHub.APIURL = s.GitHub
	cfg.GitHub.Repos = []string{repo}
	cfg.GitHub.TokenEnv = []string{"GITHUB_TOKEN"}
	cfg.PR.Follow = false
	cfg.Tmux.Socket = s.Socket
	cfg.Tmux.StartupTimeout = config.D(60 * time.Second)
	cfg.Monitor.Interval = config.D(s.Poll)
	cfg.Monitor.IdleAfter = config.D(2 * time.Minute) // the script never idles: a nudge is a failure
	cfg.Monitor.Timeout = config.D(s.Timeout)
	cfg.Monitor.ExecIdleTimeout = config.D(90 * time.Second)
	cfg.Monitor.ExecTurnTimeout = config.D(s.Timeout)
	cfg.Poll.Interval = config.D(s.Poll)
	// The runners are compared unboxed, as before boxes were the default: a box would hide the helpers' CPU
	// records from them (and the model server's port would need sandbox.forward), and what a box costs is
	// bench/sandbox's to measure.
	cfg.Sandbox.Mode = "off"
	// A scripted model picks its turn by the length of the conversation: a compaction would replay the script.
	cfg.Monitor.CompactThreshold = 64 << 20
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("benchmark config: %w", err)
	}
	return cfg, nil
}

// aceMain is ace for one world, as `ace poll` is: the service with dispatch, its queue started, until SIGTERM
// or SIGINT; then its queue stops, its tmux server and every process under it end (by PID) and the store closes.
// Its helpers are started through helperArg, so that each records its CPU.
func aceMain(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: bench "+aceArg+" SPECFILE")
		return 2
	}
	if err := runAce(args[0]); err != nil {
		fmt.Fprintln(os.Stderr, "bench ace:", err)
		return 1
	}
	return 0
}

func runAce(specPath string) error {
	b, err := os.ReadFile(specPath)
	if err != nil {
		return err
	}
	var s aceSpec
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("%s: %w", specPath, err)
	}
	cfg, err := aceConfig(s)
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	reportCPU(s.CPU)
	svc, err := service.Open(ctx, service.Options{
		Config:     cfg,
		Secrets:    secrets.NewResolver(secrets.Options{LookupEnv: os.LookupEnv}),
		Logger:     slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})),
		Executable: exe,
		Watching:   true,
		Dispatch:   true,
		Tune: func(o *workflow.Options) {
			o.Supervisor = []string{exe, helperArg, s.Records, "__headless"}
			o.LiveHost = []string{exe, helperArg, s.Records, "__live"}
		},
	})
	if err != nil {
		return err
	}
	qerr := svc.StartQueue(ctx)
	if qerr == nil {
		<-ctx.Done()
	}
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return errors.Join(qerr, svc.Queue.Stop(sctx), svc.Tmux.KillServer(sctx), svc.Close())
}

// aceUsage is ace's CPU as it writes it when asked: getrusage, to the microsecond (/proc counts in 10 ms
// ticks); N counts the answers.
type aceUsage struct {
	N        int           `json:"n"`
	Self     time.Duration `json:"self"`
	Children time.Duration `json:"children"`
}

// reportCPU writes this process's CPU to path each time it gets SIGUSR1 (atomically: the benchmark reads it).
func reportCPU(path string) {
	asked := make(chan os.Signal, 1)
	signal.Notify(asked, syscall.SIGUSR1)
	go func() {
		n := 0
		for range asked {
			n++
			var self, children syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
			_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
			b, _ := json.Marshal(aceUsage{N: n, Self: rusageCPU(self), Children: rusageCPU(children)})
			if err := atomicfile.Write(path, b, 0o600); err != nil {
				fmt.Fprintln(os.Stderr, "bench ace: write its CPU:", err)
			}
		}
	}()
}

// helperRecord is one helper's CPU, written when it exits.
type helperRecord struct {
	Kind string `json:"kind"` // __headless or __live
	PID  int    `json:"pid"`
	// Self is the helper's own CPU (user and system, all its threads); Children that of the processes it waited
	// for: the agent CLI and what it ran.
	Self     time.Duration `json:"self"`
	Children time.Duration `json:"children"`
	End      time.Time     `json:"end"`
}

// helperMain runs ace's helper program args[1:] (the supervisor, the live host) in this process, then appends
// its CPU to the records file args[0].
func helperMain(args []string) int {
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: bench "+helperArg+" RECORDS __headless|__live ARGS…")
		return 2
	}
	code, ok := cli.Child(args[1:])
	if !ok {
		fmt.Fprintln(os.Stderr, "bench: not a helper of ace:", args[1])
		return 2
	}
	var self, children syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	rec := helperRecord{Kind: args[1], PID: os.Getpid(), Self: rusageCPU(self), Children: rusageCPU(children),
		End: time.Now()}
	if err := appendRecord(args[0], rec); err != nil {
		fmt.Fprintln(os.Stderr, "bench: record the helper's CPU:", err)
	}
	return code
}

func appendRecord(path string, rec helperRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	_, werr := f.Write(append(b, '\n')) // one write: records of helpers ending at once do not interleave
	return errors.Join(werr, f.Close())
}

// readRecords reads the helpers' records of a world.
func readRecords(path string) ([]helperRecord, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []helperRecord
	dec := json.NewDecoder(bytes.NewReader(b))
	for dec.More() {
		var r helperRecord
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
		}
		out = append(out, r)
	}
	return out, nil
}

func rusageCPU(r syscall.Rusage) time.Duration {
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}
