package agentcheck

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/aceworks/ace/pkg/atomicfile"
	"github.com/aceworks/ace/pkg/netns"
)

// ChildArg is the hidden first argument of the ace process that runs one phase (see Run).
const ChildArg = "__agents-check"

// ChildMain runs one phase of the check in this process and writes its report to --report; the exit code says
// whether the report could be written (the verdict is in the report). With --netns the process runs in the
// loopback-only namespace Run made for it, and brings lo up first.
func ChildMain(args []string) int {
	fs := flag.NewFlagSet(ChildArg, flag.ContinueOnError)
	var p phase
	var report string
	var inNetns bool
	fs.StringVar(&p.agent, "agent", "", "")
	fs.StringVar(&p.name, "phase", PhaseRun, "")
	fs.StringVar(&p.dir, "dir", "", "")
	fs.StringVar(&p.configPath, "config", "", "")
	fs.StringVar(&p.network, "network", "", "")
	fs.DurationVar(&p.startup, "startup-timeout", 45*time.Second, "")
	fs.DurationVar(&p.timeout, "timeout", 2*time.Minute, "")
	fs.StringVar(&report, "report", "", "")
	fs.BoolVar(&inNetns, "netns", false, "")
	if err := fs.Parse(args); err != nil || p.agent == "" || p.dir == "" || report == "" {
		fmt.Fprintln(os.Stderr, "ace "+ChildArg+": --agent, --dir and --report are required")
		return 2
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ace "+ChildArg+": locate ace:", err)
		return 1
	}
	p.exe = exe
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var rep Report
	if inNetns {
		if err := netns.LoopbackUp(); err != nil {
			rep = Report{Agent: p.agent, Phase: p.name, Error: "bring up loopback in the check's namespace: " + err.Error()}
		}
	}
	if rep.Error == "" {
		rep = p.run(ctx)
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err == nil {
		err = atomicfile.Write(report, b, 0o600)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ace "+ChildArg+": write the report:", err)
		return 1
	}
	return 0
}
