package workflow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/headless"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tmuxops"
)

// The headless runner (agents.X.runner = "exec") runs the agent CLI one turn at a time under a detached
// supervisor (`ace __headless`), which outlives ace, enforces the idle and turn timeouts and writes the raw
// stream to <root>/logs/<agent>/<session id>.jsonl and a status file. The run keeps only names: the supervisor's
// Proc (PID and start time), the turn number, the conversation id and the transcript path. A turn that ends
// without .ace/DONE is the headless form of "idle at the prompt"; the next turn resumes the same conversation.

// execRunner is the headless runner: each turn runs under its own supervisor, the monitor reads the turn's
// status file, and text for the agent waits in the run (State.ExecPending) for the next turn.
type execRunner struct {
	execKind               // its name, and how a run of it is described (runner_kinds.go)
	runnerDefaults         // Type: a headless agent takes text only as a new turn (Queue)
	core           runHost // the run's events and the engine's rulings (runner.go)
	cfg            *config.Config
	now            clock
	log            *slog.Logger
	root           string   // ace's root: the turns' status, pulse and lock files, their logs
	supervisor     []string // Options.Supervisor: `ace __headless`, each turn's supervisor

	// The parts it calls: the run's agent (its profile, its command), the prompts of its turns, the spending
	// of each turn, the liveness and reach it tells what it sees.
	agent   *runAgent
	prompts *prompts
	spend   *spending
	alive   *liveness
	reach   *reach
}

// execName names a run's files: unique per run, readable next to the tmux sessions of other runs.
func execName(r *store.Run) string {
	return fmt.Sprintf("%s-run%d", tmuxops.SessionName(r.Repo, r.Issue), r.ID)
}

func (x *execRunner) execStatusPath(r *store.Run) string {
	return filepath.Join(x.root, "run", "headless", execName(r)+".status.json")
}

func (x *execRunner) execPulsePath(r *store.Run) string {
	return filepath.Join(x.root, "run", "headless", execName(r)+".pulse")
}

func (x *execRunner) execLockPath(r *store.Run) string {
	return filepath.Join(x.root, "run", "headless", execName(r)+".lock")
}

// execAlive reports whether a supervisor is running for the run, by its turn lock: that holds even when this
// process never learnt the supervisor's PID (an ace killed just after starting it). An error reading the lock
// falls back to the stored PID.
func (x *execRunner) execAlive(ctx context.Context, r *store.Run) bool {
	running, err := headless.Running(x.execLockPath(r))
	if err != nil {
		x.log.WarnContext(ctx, "headless turn lock", "run", r.ID, "err", err)
		return headless.ParseProc(r.State.ExecProc).Alive()
	}
	return running
}

func (x *execRunner) execLogDir(r *store.Run) string {
	return filepath.Join(x.root, "logs", r.Agent)
}

// startExec starts the first turn, or re-attaches to a supervisor a previous ace process left running.
func (x *execRunner) startExec(ctx context.Context, r *store.Run) (Result, error) {
	alive := x.execAlive(ctx, r)
	before := r.State.ExecTurn
	st := x.execStatus(ctx, r) // adopts a turn the run never recorded
	if alive && st == nil {
		return Stay(x.cfg.Monitor.Interval.Duration), nil // started, not yet reporting: look again
	}
	if st != nil && (alive || r.State.ExecTurn != before) {
		// A turn is running, or ran, that a previous ace started: the monitor takes it from here.
		x.core.event(ctx, r, "session", fmt.Sprintf("re-attached to headless %s, turn %d (supervisor pid %d)", r.Agent, st.Turn, st.SupervisorPID))
		r.State.PromptDelivered = true
		return Goto(StepMonitor), nil
	}
	if r.State.PromptDelivered {
		return Goto(StepMonitor), nil // the monitor decides about the next turn
	}
	prompt := x.prompts.taskPrompt(r)
	if r.State.Resume {
		prompt = x.prompts.resumePrompt(r)
	}
	if err := x.execTurn(ctx, r, prompt); err != nil {
		return Result{}, err
	}
	if prof, err := x.agent.profile(r); err == nil {
		x.agent.recordCLIVersion(ctx, r, prof)
	}
	r.State.PromptDelivered = true
	r.State.Resume = false
	r.State.MonitorSince = x.now()
	return Goto(StepMonitor), nil
}

// execTurn starts one turn: the agent's headless command (resuming the run's conversation when it has one) with
// prompt on its stdin, under a new supervisor. Secrets travel in a 0600 env file the supervisor reads and deletes
// (the launcher's mechanism), so no command line ever holds one.
func (x *execRunner) execTurn(ctx context.Context, r *store.Run, prompt string) error {
	if len(x.supervisor) == 0 {
		return Terminalf("the headless runner is not available (no supervisor command)")
	}
	prof, err := x.agent.profile(r)
	if err != nil {
		return err
	}
	if prof.HeadlessFormat == "" {
		return Terminalf("agent %s: runner exec needs agents.%s.headless_format (claude, codex or gemini)", prof.Name, prof.Name)
	}
	vars := x.agent.vars(r, prof)
	vars.SessionID = r.AgentSessionID
	startOver := r.State.Limit != nil && r.State.Limit.StartOver
	if startOver {
		vars.SessionID = "" // the limited conversation was never saved (limits.go): a new one
	}
	argv, err := prof.HeadlessArgv(vars)
	if err != nil {
		return Terminal(fmt.Errorf("agent %s: %w", prof.Name, err))
	}
	if err := checkExecutable(argv[0], r.Workdir, prof); err != nil {
		return Terminal(err)
	}
	cmd, err := x.agent.command(ctx, r, prof, vars, argv, false)
	if err != nil {
		return err
	}
	runtimeDir := filepath.Join(x.root, "run")
	secretsFile, err := tmuxops.WriteEnvFile(runtimeDir, cmd.secrets)
	if err != nil {
		return fmt.Errorf("agent environment: %w", err)
	}
	turn := r.State.ExecTurn
	turn++
	logDir := x.execLogDir(r)
	status := x.execStatusPath(r)
	for _, dir := range []string{logDir, filepath.Dir(status)} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			os.Remove(secretsFile)
			return fmt.Errorf("create %s: %w", dir, err)
		}
	}
	if x.execAlive(ctx, r) {
		// Never two turns at once (nor remove a running turn's status below); Start checks again under the lock.
		os.Remove(secretsFile)
		return fmt.Errorf("start turn %d: %w", turn, headless.ErrRunning)
	}
	// The previous turn's status stays until the new supervisor replaces it: its turn number keeps it from
	// being read as this one's, and an ace killed before the new turn is recorded still finds how the last
	// one ended.
	m := x.cfg.Monitor
	spec := headless.Spec{
		Argv:          cmd.argv,
		Env:           cmd.env,
		Boxed:         cmd.boxed,
		SecretsFile:   secretsFile,
		Dir:           r.Workdir,
		Prompt:        prompt,
		Format:        prof.HeadlessFormat,
		TranscriptDir: logDir,
		SessionID:     vars.SessionID,
		Orphan:        filepath.Join(logDir, fmt.Sprintf("%s-turn%d.jsonl", execName(r), turn)),
		StatusPath:    status,
		Turn:          turn,
		IdleTimeout:   m.ExecIdleTimeout.Duration,
		TurnTimeout:   m.ExecTurnTimeout.Duration,
		Pulse:         x.execPulsePath(r), // liveness_exec.go: what ace sees of the agent's work, the supervisor not
	}
	proc, err := headless.Start(x.supervisor, spec, runtimeDir, filepath.Join(logDir, execName(r)+".debug.log"), x.execLockPath(r))
	if err != nil {
		os.Remove(secretsFile)
		return err
	}
	r.State.ExecProc = proc.String()
	r.State.ExecTurn = turn
	markStart(r)
	r.State.ExecFormat = prof.HeadlessFormat
	if startOver {
		r.State.Limit.StartOver = false
		r.AgentSessionID = "" // the new turn names its conversation
	}
	how := "started"
	if vars.SessionID != "" {
		how = "resumed conversation " + r.AgentSessionID + " of"
	}
	x.core.event(ctx, r, "session", fmt.Sprintf("%s headless %s, turn %d (transcript: ace logs %d)", how, prof.Name, turn, r.Issue))
	return nil
}

// execStatus reads the current turn's status and copies what it learnt (conversation id, transcript) to the run.
func (x *execRunner) execStatus(ctx context.Context, r *store.Run) *headless.Status {
	st, err := headless.ReadStatus(x.execStatusPath(r))
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			x.log.WarnContext(ctx, "read headless status", "run", r.ID, "err", err)
		}
		return nil
	}
	turn := r.State.ExecTurn
	switch {
	case st.Turn < turn:
		return nil // the previous turn's, not yet replaced
	case st.Turn > turn:
		// A turn this run never recorded: its ace was killed right after starting it. Adopt it.
		r.State.ExecTurn = st.Turn
		r.State.ExecProc = headless.Proc{PID: st.SupervisorPID, Start: st.SupervisorStart}.String()
		if f := r.State.ExecFormat; f == "" {
			if prof, err := x.agent.profile(r); err == nil {
				r.State.ExecFormat = prof.HeadlessFormat
			}
		}
	}
	if st.SessionID != "" {
		r.AgentSessionID = st.SessionID
	}
	if st.Transcript != "" {
		r.State.Transcript = st.Transcript
	}
	return st
}

// lastWords is what a human gets to see of a headless agent: its last message and its stderr tail.
func lastWords(st *headless.Status) string {
	if st == nil {
		return ""
	}
	var parts []string
	if t := strings.TrimSpace(st.LastText); t != "" {
		parts = append(parts, t)
	}
	if t := strings.TrimSpace(st.StderrTail); t != "" {
		parts = append(parts, "stderr:\n"+t)
	}
	return strings.Join(parts, "\n\n")
}

// killAgent ends an agent process group whose supervisor is gone without having ended it.
func (x *execRunner) killAgent(st *headless.Status) {
	if st == nil || st.Done || st.AgentPID == 0 {
		return
	}
	_ = headless.Proc{PID: st.AgentPID, Start: st.AgentStart}.Signal(syscall.SIGKILL)
}
