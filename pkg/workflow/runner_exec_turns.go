package workflow

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/aceworks/ace/pkg/headless"
	"github.com/aceworks/ace/pkg/store"
)

// execRunning is the monitor's first look at a headless run: while a turn runs, nothing else is decided (the
// agent may still be writing .ace/DONE or its last commit); only monitor.timeout can end it. busy is false
// once the turn is over, which it records once as a run event.
func (e *Engine) execRunning(ctx context.Context, r *store.Run) (res Result, busy bool, err error) {
	// The lock, not the status, says the turn is over: a supervisor that has written its end still has to
	// exit, and no next turn may start before it has. The status is read after the lock, so that it is final.
	alive := e.execAlive(ctx, r)
	st := e.execStatus(ctx, r)
	if !alive {
		if r.State.ExecSeen != r.State.ExecTurn {
			e.recordTurnEnd(ctx, r, st)
			e.addTurnUsage(r, st) // usage.go
			r.State.ExecSeen = r.State.ExecTurn
			// A supervisor that died without finishing may have left the agent running.
			e.killAgent(st)
		}
		return Result{}, false, nil
	}
	if e.timedOut(r, lastWords(st)) {
		return Goto(StepFailed), true, nil
	}
	return Stay(e.cfg.Monitor.Interval.Duration), true, nil
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
	turn := r.State.ExecTurn
	switch {
	case st.Turn < turn:
		return nil // the previous turn's, not yet replaced
	case st.Turn > turn:
		// A turn this run never recorded: its ace was killed right after starting it. Adopt it.
		r.State.ExecTurn = st.Turn
		r.State.ExecProc = headless.Proc{PID: st.SupervisorPID, Start: st.SupervisorStart}.String()
		if f := r.State.ExecFormat; f == "" {
			if prof, err := e.profile(r); err == nil {
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

// execTurnEnded decides after a turn that ended without .ace/DONE or .ace/QUESTION: a queued prompt goes next;
// a clean end is idleness (nudge, then a human); a crash, a timeout or a lost supervisor is an exit (finalize
// what is there, else resume a bounded number of times, else fail).
func (e *Engine) execTurnEnded(ctx context.Context, r *store.Run) (Result, error) {
	st := e.execStatus(ctx, r) // execRunning, just before, recorded how the turn ended
	interval := e.cfg.Monitor.Interval.Duration
	// Turns may start and end between two looks: the run's time is checked before each new one, too.
	if e.timedOut(r, lastWords(st)) {
		return Goto(StepFailed), nil
	}
	if res, ok, err := e.limitInTurn(ctx, r, st); ok || err != nil { // usage limits: node_limit.go
		return res, err
	}
	if p := r.State.ExecPending; p != "" {
		if err := e.execTurn(ctx, r, p); err != nil {
			return Result{}, err
		}
		r.State.ExecPending = ""
		return Stay(interval), nil
	}
	if st != nil && st.Done && st.Outcome == headless.OutcomeExited && st.ExitCode == 0 && !st.ResultError {
		if compacted, err := e.execCompaction(ctx, r); compacted || err != nil {
			return Stay(interval), err
		}
		return e.execIdle(ctx, r, st)
	}
	return e.execExit(ctx, r, st)
}

// execIdle nudges with a new turn of the same conversation, up to max_nudges times; then a human is asked.
func (e *Engine) execIdle(ctx context.Context, r *store.Run, st *headless.Status) (Result, error) {
	m := e.cfg.Monitor
	if res, ok, err := e.budgetStop(ctx, r, lastWords(st)); ok {
		return res, err
	}
	if r.Nudges >= m.MaxNudges {
		msg := fmt.Sprintf("The agent ended %d turns without finishing (%d nudges). Its last message:", r.Nudges+1, r.Nudges)
		if err := e.askHuman(ctx, r, msg, lastWords(st)); err != nil {
			return Result{}, err
		}
		return toHuman(), nil
	}
	if err := e.execTurn(ctx, r, e.nudgePrompt()); err != nil {
		return Result{}, fmt.Errorf("nudge: %w", err)
	}
	r.Nudges++
	r.State.NudgedAt = e.o.Now()
	e.event(ctx, r, "nudge", fmt.Sprintf("nudged the agent with a new turn (%d/%d)", r.Nudges, m.MaxNudges))
	return Stay(m.Interval.Duration), nil
}

// execExit is onAgentExit for a headless turn that failed.
func (e *Engine) execExit(ctx context.Context, r *store.Run, st *headless.Status) (Result, error) {
	worked, err := e.leftWork(ctx, r)
	if err != nil {
		return Result{}, err
	}
	how := e.turnEnd(st)
	if worked {
		e.event(ctx, r, "agent-exited", how+"; finalizing what it did")
		return Goto(StepFinalize), nil
	}
	if r.Restarts < e.cfg.Monitor.MaxRestarts {
		// Counted once the turn has started: a failed start is retried without using up a restart.
		if err := e.execTurn(ctx, r, e.resumePrompt(r)); err != nil {
			return Result{}, err
		}
		r.Restarts++
		e.event(ctx, r, "agent-exited", fmt.Sprintf("%s without changes; resumed it (%d/%d)", how, r.Restarts, e.cfg.Monitor.MaxRestarts))
		return Stay(e.cfg.Monitor.Interval.Duration), nil
	}
	r.Error = how
	r.State.LastScreen = lastWords(st)
	return Goto(StepFailed), nil
}

// recordTurnEnd appends the end of a turn to the run's events: always, with the stderr tail when it failed.
func (e *Engine) recordTurnEnd(ctx context.Context, r *store.Run, st *headless.Status) {
	msg := fmt.Sprintf("turn %d: %s", r.State.ExecTurn, e.turnEnd(st))
	kind := EventTurn
	if st == nil || st.Outcome != headless.OutcomeExited || st.ExitCode != 0 || st.ResultError {
		kind = EventAgentFailed
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
	if p := r.State.ExecPending; p != "" {
		text = p + "\n\n" + text
	}
	r.State.ExecPending = text
}

// endExec stops the run's supervisor (which ends the agent's process group) and waits, briefly, for it to go.
func (e *Engine) endExec(ctx context.Context, r *store.Run) error {
	st := e.execStatus(ctx, r)
	if e.execAlive(ctx, r) {
		proc := headless.ParseProc(r.State.ExecProc)
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
				// The run may not know the supervisor that holds the lock (an ace killed right after starting
				// it): its status names it, once it has written one.
				if cur := e.execStatus(ctx, r); cur != nil {
					_ = headless.Proc{PID: cur.SupervisorPID, Start: cur.SupervisorStart}.Signal(syscall.SIGKILL)
				}
				break wait
			case <-t.C:
			}
		}
		if e.execAlive(ctx, r) {
			return fmt.Errorf("the headless supervisor of %s#%d does not stop (lock %s)", r.Repo, r.Issue, e.execLockPath(r))
		}
		e.event(ctx, r, "session", fmt.Sprintf("stopped the headless %s (supervisor pid %d)", r.Agent, proc.PID))
	}
	if st != nil && !st.Done {
		st = e.execStatus(ctx, r) // what the supervisor wrote as it stopped
	}
	e.killAgent(st)
	// The run is over: its turn files go (the transcript and the debug log stay, as a tmux transcript does).
	for _, f := range []string{e.execStatusPath(r), e.execLockPath(r)} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			e.log.WarnContext(ctx, "remove headless turn file", "run", r.ID, "file", f, "err", err)
		}
	}
	return nil
}

// abandonTurn stops a headless turn that this step started but could not record, because another process
// ended the run meanwhile (ace stop): nobody else knows of that supervisor.
func (e *Engine) abandonTurn(mine, fresh *store.Run) {
	started := mine.State.ExecProc
	if !fresh.Status.Terminal() || started == "" || started == fresh.State.ExecProc { // "": not a headless run
		return
	}
	if err := headless.ParseProc(started).Signal(syscall.SIGTERM); err != nil {
		e.log.Warn("stop an abandoned headless turn", "run", mine.ID, "err", err)
	}
}

// killAgent ends an agent process group whose supervisor is gone without having ended it.
func (e *Engine) killAgent(st *headless.Status) {
	if st == nil || st.Done || st.AgentPID == 0 {
		return
	}
	_ = headless.Proc{PID: st.AgentPID, Start: st.AgentStart}.Signal(syscall.SIGKILL)
}
