package agentcheck

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/netns"
	"github.com/aceworks/ace/pkg/runbox"
	"github.com/aceworks/ace/pkg/service"
)

// Options configure a check.
type Options struct {
	// Agents are the agents to check; empty: every built-in agent whose CLI is installed here.
	Agents []string
	// Config is the user's configuration (their agents' settings); ConfigPath is where it was read ("" when
	// there is none), for the phase processes to read it too.
	Config     *config.Config
	ConfigPath string
	// Executable is the ace binary that runs each phase (and the launcher in tmux).
	Executable string
	// Dir keeps the check's files (logs, screens, working copies); "" = a temporary directory, removed when
	// every check passed and kept otherwise.
	Dir string
	// StartupTimeout is how long an agent may take to show its composer (tmux.startup_timeout of the runs).
	StartupTimeout time.Duration
	// Timeout bounds each phase.
	Timeout time.Duration
	// Out receives the progress lines.
	Out io.Writer
	// Env is added to the environment of the phase processes (KEY=value): a PATH where the CLI to check comes
	// first, say.
	Env []string
}

// Checkable says whether ace can check agent p offline, and why not: it must be a CLI ace knows how to point
// at its scripted model server.
func Checkable(p agents.Profile) error {
	a := p.Adapter()
	if a == nil || a.CLI == "" || a.Internal {
		return fmt.Errorf("agent %s is not a CLI ace can script offline (claude, codex, gemini): try it on a test issue instead", p.Name)
	}
	return nil
}

// Run checks each agent: its two phases (run, limit) in processes of their own, side by side, each in a
// loopback-only namespace where the kernel allows one. It returns a result per agent; err is for the check
// itself failing (no directory, no ace binary).
func Run(ctx context.Context, o Options) (results []Result, dir string, err error) {
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Config == nil {
		o.Config = config.Default()
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Minute
	}
	if o.StartupTimeout <= 0 {
		o.StartupTimeout = 45 * time.Second
	}
	names := o.Agents
	if len(names) == 0 {
		names = installed(ctx, o.Config)
		if len(names) == 0 {
			return nil, "", errors.New("no agent CLI is installed here (claude, codex, gemini): nothing to check")
		}
	}
	if dir = o.Dir; dir == "" {
		if dir, err = os.MkdirTemp("", "ace-agents-check-"); err != nil {
			return nil, "", err
		}
	}
	network := "loopback-only namespace"
	if nerr := netns.Available(ctx); nerr != nil {
		network = "not isolated (" + nerr.Error() + "): the CLI could reach the network"
	}
	for _, name := range names {
		res := Result{Agent: name, CheckedAt: time.Now().UTC()}
		prof, perr := service.Profile(o.Config, name)
		if perr == nil {
			perr = Checkable(prof)
		}
		if perr != nil {
			res.Reports = []Report{{Agent: name, Error: perr.Error()}}
			results = append(results, res)
			continue
		}
		fmt.Fprintf(o.Out, "checking %s …\n", name)
		// The user's real setup, the way the agent's runs go (boxed where they are): a connection to each
		// endpoint its configuration names, no request.
		if reach, err := runbox.CheckReach(ctx, o.Config, prof, o.Executable); err != nil {
			res.Reach = []runbox.ReachCheck{{Detail: "not checked: " + err.Error()}}
		} else {
			res.Reach = reach
		}
		phases := []string{PhaseRun, PhaseLimit, PhaseGateway}
		if prof.Live != "" {
			phases = append(phases, PhaseLive)
		}
		res.Reports = make([]Report, len(phases))
		var wg sync.WaitGroup
		for i, ph := range phases {
			wg.Go(func() {
				res.Reports[i] = o.phase(ctx, name, ph, filepath.Join(dir, name, ph), network)
			})
		}
		wg.Wait()
		res.Version = res.Reports[0].Version
		results = append(results, res)
	}
	return results, dir, nil
}

// installed lists the built-in agents whose CLI is on PATH.
func installed(ctx context.Context, cfg *config.Config) []string {
	var out []string
	for _, name := range agents.BuiltinNames() {
		p, err := service.Profile(cfg, name)
		if err != nil || Checkable(p) != nil {
			continue
		}
		if _, err := exec.LookPath(p.Program()); err == nil {
			out = append(out, name)
		}
	}
	return out
}

// phase runs one phase in a child ace process and reads its report.
func (o Options) phase(ctx context.Context, agent, phase, dir, network string) Report {
	fail := func(err error) Report {
		return Report{Agent: agent, Phase: phase, Network: network, Dir: dir, Error: err.Error(), At: time.Now().UTC()}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fail(err)
	}
	report := filepath.Join(dir, "report.json")
	args := []string{ChildArg, "--agent", agent, "--phase", phase, "--dir", dir, "--report", report,
		"--config", o.ConfigPath, "--network", network,
		"--startup-timeout", o.StartupTimeout.String(), "--timeout", o.Timeout.String()}
	// The child gets a minute past its own timeout to write its report and end its processes.
	ctx, cancel := context.WithTimeout(ctx, o.Timeout+time.Minute)
	defer cancel()
	var cmd *exec.Cmd
	if network == "loopback-only namespace" {
		c, err := netns.Command(ctx, o.Executable, append(args, "--netns")...)
		if err != nil {
			return fail(err)
		}
		cmd = c
	} else {
		cmd = exec.CommandContext(ctx, o.Executable, args...)
	}
	out, err := os.Create(filepath.Join(dir, "phase.log"))
	if err != nil {
		return fail(err)
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), o.Env...)
	cmd.WaitDelay = 10 * time.Second
	runErr := cmd.Run()
	b, err := os.ReadFile(report)
	if err != nil {
		return fail(fmt.Errorf("the check's process wrote no report (%v): see %s", runErr, out.Name()))
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return fail(fmt.Errorf("read %s: %w", report, err))
	}
	return rep
}
