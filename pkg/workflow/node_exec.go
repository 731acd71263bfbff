package workflow

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/headless"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tmuxops"
)

// The headless runner (agents.X.runner = "exec") runs the agent CLI one turn at a time under a detached
// supervisor (`ace __headless`), which outlives ace, enforces the idle and turn timeouts and writes the raw
// stream to <root>/logs/<agent>/<session id>.jsonl and a status file. The run keeps only names: the supervisor's
// Proc (PID and start time), the turn number, the conversation id and the transcript path. A turn that ends
// without .ace/DONE is the headless form of "idle at the prompt"; the next turn resumes the same conversation.

// Keys of store.Run.Vars the headless runner uses.
const (
	varExecProc    = "exec_proc"    // the current turn's supervisor, headless.Proc.String()
	varExecTurn    = "exec_turn"    // number of the current (or last) turn
	varExecSeen    = "exec_seen"    // the last turn whose end was recorded
	varExecPending = "exec_pending" // a prompt (nudge, answer) for the next turn
	varExecFormat  = "exec_format"  // stream format of the transcript
	varTranscript  = "transcript"   // path of the JSONL transcript
)

// ErrHeadless is returned by operations that need a terminal screen when the run has none.
var ErrHeadless = errors.New("the run is headless (runner exec): there is no screen; read its transcript with `ace logs`")

func isExec(r *store.Run) bool { return r.Runner == "exec" }

func runnerOf(p agents.Profile) string {
	if p.Runner == "exec" {
		return "exec"
	}
	return "tmux"
}

// Transcript returns the headless transcript of a run and its stream format; ok is false for tmux runs and
// runs whose agent has not named its session yet.
func Transcript(r *store.Run) (path, format string, ok bool) {
	path, format = r.Vars[varTranscript], r.Vars[varExecFormat]
	return path, format, isExec(r) && path != "" && format != ""
}

// execName names a run's files: unique per run, readable next to the tmux sessions of other runs.
func execName(r *store.Run) string {
	return fmt.Sprintf("%s-run%d", tmuxops.SessionName(r.Repo, r.Issue), r.ID)
}

func (e *Engine) execStatusPath(r *store.Run) string {
	return filepath.Join(e.o.Root, "run", "headless", execName(r)+".status.json")
}

func (e *Engine) execLockPath(r *store.Run) string {
	return filepath.Join(e.o.Root, "run", "headless", execName(r)+".lock")
}

// execAlive reports whether a supervisor is running for the run, by its turn lock: that holds even when this
// process never learnt the supervisor's PID (an ace killed just after starting it). An error reading the lock
// falls back to the stored PID.
func (e *Engine) execAlive(ctx context.Context, r *store.Run) bool {
	running, err := headless.Running(e.execLockPath(r))
	if err != nil {
		e.log.WarnContext(ctx, "headless turn lock", "run", r.ID, "err", err)
		return headless.ParseProc(r.Vars[varExecProc]).Alive()
	}
	return running
}

func (e *Engine) execLogDir(r *store.Run) string { return filepath.Join(e.o.Root, "logs", r.Agent) }

// startExec starts the first turn, or re-attaches to a supervisor a previous ace process left running.
func (e *Engine) startExec(ctx context.Context, r *store.Run) (Result, error) {
	alive := e.execAlive(ctx, r)
	before := r.Vars[varExecTurn]
	st := e.execStatus(ctx, r) // adopts a turn the run never recorded
	if alive && st == nil {
		return Stay(e.cfg.Monitor.Interval.Duration), nil // started, not yet reporting: look again
	}
	if st != nil && (alive || r.Vars[varExecTurn] != before) {
		// A turn is running, or ran, that a previous ace started: the monitor takes it from here.
		e.event(ctx, r, "session", fmt.Sprintf("re-attached to headless %s, turn %d (supervisor pid %d)", r.Agent, st.Turn, st.SupervisorPID))
		r.Vars[varDelivered] = "1"
		return Goto(StepMonitor), nil
	}
	if r.Vars[varDelivered] == "1" {
		return Goto(StepMonitor), nil // the monitor decides about the next turn
	}
	prompt := e.taskPrompt(r)
	if r.Vars[varResume] == "1" {
		prompt = e.resumePrompt(r)
	}
	if err := e.execTurn(ctx, r, prompt); err != nil {
		return Result{}, err
	}
	r.Vars[varDelivered] = "1"
	delete(r.Vars, varResume)
	r.Vars[varMonitorSince] = e.stamp()
	return Goto(StepMonitor), nil
}

// execTurn starts one turn: the agent's headless command (resuming the run's conversation when it has one) with
// prompt on its stdin, secrets through the launcher's env file, under a new supervisor.
func (e *Engine) execTurn(ctx context.Context, r *store.Run, prompt string) error {
	if len(e.o.Supervisor) == 0 {
		return Terminalf("the headless runner is not available (no supervisor command)")
	}
	prof, err := e.profile(r)
	if err != nil {
		return err
	}
	if prof.HeadlessFormat == "" {
		return Terminalf("agent %s: runner exec needs agents.%s.headless_format (claude, codex or gemini)", prof.Name, prof.Name)
	}
	vars := agents.Vars{
		Model: prof.Model, TaskFile: filepath.Join(r.Workdir, "ACE_TASK.md"), Workdir: r.Workdir,
		Repo: r.Repo, Issue: r.Issue, AceBin: filepath.Join(e.o.Root, "bin"), SessionID: r.AgentSessionID,
	}
	argv, err := prof.HeadlessArgv(vars)
	if err != nil {
		return Terminal(fmt.Errorf("agent %s: %w", prof.Name, err))
	}
	if err := checkExecutable(argv[0], r.Workdir, prof); err != nil {
		return Terminal(err)
	}
	env, secrets, err := e.agentEnv(ctx, r, prof, vars)
	if err != nil {
		return err
	}
	runtimeDir := filepath.Join(e.o.Root, "run")
	secretsFile, err := tmuxops.WriteEnvFile(runtimeDir, secrets)
	if err != nil {
		return fmt.Errorf("agent environment: %w", err)
	}
	turn, _ := strconv.Atoi(r.Vars[varExecTurn])
	turn++
	logDir := e.execLogDir(r)
	status := e.execStatusPath(r)
	for _, dir := range []string{logDir, filepath.Dir(status)} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			os.Remove(secretsFile)
			return fmt.Errorf("create %s: %w", dir, err)
		}
	}
	// A status left by the previous turn must not be read as this one's.
	if err := os.Remove(status); err != nil && !errors.Is(err, os.ErrNotExist) {
		os.Remove(secretsFile)
		return fmt.Errorf("clear the previous turn's status: %w", err)
	}
	m := e.cfg.Monitor
	spec := headless.Spec{
		Argv:          argv,
		Env:           env,
		SecretsFile:   secretsFile,
		Dir:           r.Workdir,
		Prompt:        prompt,
		Format:        prof.HeadlessFormat,
		TranscriptDir: logDir,
		SessionID:     r.AgentSessionID,
		Orphan:        filepath.Join(logDir, fmt.Sprintf("%s-turn%d.jsonl", execName(r), turn)),
		StatusPath:    status,
		Turn:          turn,
		IdleTimeout:   m.ExecIdleTimeout.Duration,
		TurnTimeout:   m.ExecTurnTimeout.Duration,
	}
	proc, err := headless.Start(e.o.Supervisor, spec, runtimeDir, filepath.Join(logDir, execName(r)+".debug.log"), e.execLockPath(r))
	if err != nil {
		os.Remove(secretsFile)
		return err
	}
	r.Vars[varExecProc] = proc.String()
	r.Vars[varExecTurn] = strconv.Itoa(turn)
	r.Vars[varExecFormat] = prof.HeadlessFormat
	how := "started"
	if r.AgentSessionID != "" {
		how = "resumed conversation " + r.AgentSessionID + " of"
	}
	e.event(ctx, r, "session", fmt.Sprintf("%s headless %s, turn %d (transcript: ace logs %d)", how, prof.Name, turn, r.Issue))
	return nil
}

// execRunning is the monitor's first look at a headless run: while a turn runs, nothing else is decided (the
// agent may still be writing .ace/DONE or its last commit); only monitor.timeout can end it. busy is false for
// tmux runs and once the turn is over, which it records once as a run event.
func (e *Engine) execRunning(ctx context.Context, r *store.Run) (res Result, busy bool, err error) {
	if !isExec(r) {
		return Result{}, false, nil
	}
	st := e.execStatus(ctx, r)
	if !e.execAlive(ctx, r) || st != nil && st.Done {
		if r.Vars[varExecSeen] != r.Vars[varExecTurn] {
			e.recordTurnEnd(ctx, r, st)
			r.Vars[varExecSeen] = r.Vars[varExecTurn]
			// A supervisor that died without finishing may have left the agent running.
			e.killAgent(st)
		}
		return Result{}, false, nil
	}
	m := e.cfg.Monitor
	if r.Vars[varMonitorSince] != "" && e.since(r.Vars[varMonitorSince]) > m.Timeout.Duration {
		r.Error = fmt.Sprintf("the agent did not finish within monitor.timeout (%s)", m.Timeout.Duration)
		r.Vars[varLastScreen] = lastWords(st)
		return Goto(StepFailed), true, nil
	}
	return Stay(m.Interval.Duration), true, nil
}

// execStatus reads the current turn's status and copies what it learnt (conversation id, transcript) to the run.
func (e *Engine) execStatus(ctx context.Context, r *store.Run) *headless.Status {
	st, err := headless.ReadStatus(e.execStatusPath(r))
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			e.log.WarnContext(ctx, "read headless status", "run", r.ID, "err", err)
		}
		return nil
	}
	turn, _ := strconv.Atoi(r.Vars[varExecTurn])
	switch {
	case st.Turn < turn:
		return nil // the previous turn's, not yet replaced
	case st.Turn > turn:
		// A turn this run never recorded: its ace was killed right after starting it. Adopt it.
		r.Vars[varExecTurn] = strconv.Itoa(st.Turn)
		r.Vars[varExecProc] = headless.Proc{PID: st.SupervisorPID, Start: st.SupervisorStart}.String()
		if f := r.Vars[varExecFormat]; f == "" {
			if prof, err := e.profile(r); err == nil {
				r.Vars[varExecFormat] = prof.HeadlessFormat
			}
		}
	}
	if st.SessionID != "" {
		r.AgentSessionID = st.SessionID
	}
	if st.Transcript != "" {
		r.Vars[varTranscript] = st.Transcript
	}
	return st
}

// execTurnEnded decides after a turn that ended without .ace/DONE or .ace/QUESTION: a queued prompt goes next;
// a clean end is idleness (nudge, then a human); a crash, a timeout or a lost supervisor is an exit (finalize
// what is there, else resume a bounded number of times, else fail).
func (e *Engine) execTurnEnded(ctx context.Context, r *store.Run) (Result, error) {
	st := e.execStatus(ctx, r) // execRunning, just before, recorded how the turn ended
	interval := e.cfg.Monitor.Interval.Duration
	if p := r.Vars[varExecPending]; p != "" {
		if err := e.execTurn(ctx, r, p); err != nil {
			return Result{}, err
		}
		delete(r.Vars, varExecPending)
		return Stay(interval), nil
	}
	if st != nil && st.Done && st.Outcome == headless.OutcomeExited && st.ExitCode == 0 && !st.ResultError {
		return e.execIdle(ctx, r, st)
	}
	return e.execExit(ctx, r, st)
}

// execIdle nudges with a new turn of the same conversation, up to max_nudges times; then a human is asked.
func (e *Engine) execIdle(ctx context.Context, r *store.Run, st *headless.Status) (Result, error) {
	m := e.cfg.Monitor
	if r.Nudges >= m.MaxNudges {
		msg := fmt.Sprintf("The agent ended %d turns without finishing (%d nudges). Its last message:", r.Nudges+1, r.Nudges)
		if err := e.askHuman(ctx, r, msg, lastWords(st)); err != nil {
			return Result{}, err
		}
		return Goto(StepWaitingInput), nil
	}
	if err := e.execTurn(ctx, r, e.nudgePrompt()); err != nil {
		return Result{}, fmt.Errorf("nudge: %w", err)
	}
	r.Nudges++
	r.Vars[varNudgedAt] = e.stamp()
	e.event(ctx, r, "nudge", fmt.Sprintf("nudged the agent with a new turn (%d/%d)", r.Nudges, m.MaxNudges))
	return Stay(m.Interval.Duration), nil
}

// execExit is onAgentExit for a headless turn that failed.
func (e *Engine) execExit(ctx context.Context, r *store.Run, st *headless.Status) (Result, error) {
	ws, err := e.o.Workspaces.Open(ctx, r.Repo, r.Issue)
	if err != nil {
		return Result{}, fmt.Errorf("open working copy: %w", err)
	}
	ahead, err := ws.CommitsAhead(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("count commits: %w", err)
	}
	changed, err := ws.HasChanges(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("look for changes: %w", err)
	}
	how := e.turnEnd(st)
	if ahead > 0 || changed {
		e.event(ctx, r, "agent-exited", how+"; finalizing what it did")
		return Goto(StepFinalize), nil
	}
	if r.Restarts < e.cfg.Monitor.MaxRestarts {
		r.Restarts++
		e.event(ctx, r, "agent-exited", fmt.Sprintf("%s without changes; resuming it (%d/%d)", how, r.Restarts, e.cfg.Monitor.MaxRestarts))
		if err := e.execTurn(ctx, r, e.resumePrompt(r)); err != nil {
			return Result{}, err
		}
		return Stay(e.cfg.Monitor.Interval.Duration), nil
	}
	r.Error = how
	r.Vars[varLastScreen] = lastWords(st)
	return Goto(StepFailed), nil
}

// recordTurnEnd appends the end of a turn to the run's events: always, with the stderr tail when it failed.
func (e *Engine) recordTurnEnd(ctx context.Context, r *store.Run, st *headless.Status) {
	msg := fmt.Sprintf("turn %s: %s", r.Vars[varExecTurn], e.turnEnd(st))
	kind := "turn"
	if st == nil || st.Outcome != headless.OutcomeExited || st.ExitCode != 0 || st.ResultError {
		kind = "agent-failed"
		if st != nil && strings.TrimSpace(st.StderrTail) != "" {
			msg += "; stderr:\n" + strings.TrimSpace(st.StderrTail)
		}
	}
	if st != nil && st.Usage != (headless.Usage{}) {
		msg += fmt.Sprintf(" (tokens: %d in, %d out)", st.Usage.InputTokens, st.Usage.OutputTokens)
	}
	e.event(ctx, r, kind, msg)
}

// turnEnd says in words how a turn ended.
func (e *Engine) turnEnd(st *headless.Status) string {
	m := e.cfg.Monitor
	switch {
	case st == nil || !st.Done:
		return "the headless supervisor disappeared before the turn ended"
	case st.Outcome == headless.OutcomeIdleTimeout:
		return fmt.Sprintf("the agent was killed after %s without output (monitor.exec_idle_timeout)", m.ExecIdleTimeout.Duration)
	case st.Outcome == headless.OutcomeTurnTimeout:
		return fmt.Sprintf("the agent was killed after a turn of %s (monitor.exec_turn_timeout)", m.ExecTurnTimeout.Duration)
	case st.Outcome == headless.OutcomeStopped:
		return "the agent was stopped"
	case st.Outcome == headless.OutcomeStartFailed:
		return "the agent could not be started"
	case st.ExitCode != 0:
		return fmt.Sprintf("the agent exited with status %d", st.ExitCode)
	case st.ResultError:
		return fmt.Sprintf("the agent ended its turn with an error (%s)", st.ResultStatus)
	}
	return "the agent ended its turn"
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

// queueExec keeps text for the next turn of a headless run (a nudge or a human's answer); the monitor starts
// that turn as soon as the current one has ended.
func queueExec(r *store.Run, text string) {
	if p := r.Vars[varExecPending]; p != "" {
		text = p + "\n\n" + text
	}
	r.Vars[varExecPending] = text
}

// endExec stops the run's supervisor (which ends the agent's process group) and waits, briefly, for it to go.
func (e *Engine) endExec(ctx context.Context, r *store.Run) error {
	st := e.execStatus(ctx, r)
	if e.execAlive(ctx, r) {
		proc := headless.ParseProc(r.Vars[varExecProc])
		if err := proc.Signal(syscall.SIGTERM); err != nil {
			return fmt.Errorf("stop the headless supervisor: %w", err)
		}
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		deadline := time.NewTimer(5 * time.Second)
		defer deadline.Stop()
	wait:
		for e.execAlive(ctx, r) {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-deadline.C:
				_ = proc.Signal(syscall.SIGKILL)
				break wait
			case <-t.C:
			}
		}
		e.event(ctx, r, "session", fmt.Sprintf("stopped the headless %s (supervisor pid %d)", r.Agent, proc.PID))
	}
	if st != nil && !st.Done {
		st = e.execStatus(ctx, r) // what the supervisor wrote as it stopped
	}
	e.killAgent(st)
	return nil
}

// killAgent ends an agent process group whose supervisor is gone without having ended it.
func (e *Engine) killAgent(st *headless.Status) {
	if st == nil || st.Done || st.AgentPID == 0 {
		return
	}
	_ = headless.Proc{PID: st.AgentPID, Start: st.AgentStart}.Signal(syscall.SIGKILL)
}
