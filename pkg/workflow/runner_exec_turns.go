package workflow

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/headless"
	"github.com/aceworks/ace/pkg/store"
)

// execRunning is the monitor's first look at a headless run: while a turn runs, nothing else is decided (the
// agent may still be writing .ace/DONE or its last commit); only monitor.timeout can end it. busy is false
// once the turn is over, which it records once as a run event.
func (x *execRunner) execRunning(ctx context.Context, r *store.Run) (res Result, busy bool, err error) {
	// The lock, not the status, says the turn is over: a supervisor that has written its end still has to
	// exit, and no next turn may start before it has. The status is read after the lock, so that it is final.
	alive := x.execAlive(ctx, r)
	st := x.execStatus(ctx, r)
	if !alive {
		x.alive.forget(r.ID)
		if r.State.ExecSeen != r.State.ExecTurn {
			x.retryInTurn(ctx, r, st) // reach_runners.go: what the turn said last of its retries
			x.recordTurnEnd(ctx, r, st)
			x.addTurnUsage(r, st) // usage.go
			r.State.ExecSeen = r.State.ExecTurn
			// A supervisor that died without finishing may have left the agent running.
			x.killAgent(st)
		}
		return Result{}, false, nil
	}
	x.retryInTurn(ctx, r, st) // reach_runners.go: the turn retrying its model, or its model answering
	if x.core.timedOut(r, lastWords(st)) {
		return Goto(StepFailed), true, nil
	}
	if res, stuck, err := x.stuck(ctx, r, st); stuck || err != nil { // liveness_exec.go
		return res, true, err
	}
	return Stay(x.cfg.Monitor.Interval.Duration), true, nil
}

// execTurnEnded decides after a turn that ended without .ace/DONE or .ace/QUESTION: a queued prompt goes next;
// a clean end is idleness (nudge, then a human); a crash, a timeout or a lost supervisor is an exit (finalize
// what is there, else resume a bounded number of times, else fail).
func (x *execRunner) execTurnEnded(ctx context.Context, r *store.Run) (Result, error) {
	st := x.execStatus(ctx, r) // execRunning, just before, recorded how the turn ended
	interval := x.cfg.Monitor.Interval.Duration
	// Turns may start and end between two looks: the run's time is checked before each new one, too.
	if x.core.timedOut(r, lastWords(st)) {
		return Goto(StepFailed), nil
	}
	if res, ok, err := x.limitInTurn(ctx, r, st); ok || err != nil { // usage limits: limits.go
		return res, err
	}
	if p := r.State.ExecPending; p != "" {
		if err := x.execTurn(ctx, r, p); err != nil {
			return Result{}, err
		}
		r.State.ExecPending = ""
		return Stay(interval), nil
	}
	if res, ok, err := x.reach.gaveUp(r, lastWords(st)); ok || err != nil { // the model unreachable: reach.go
		return res, err
	}
	if endedWell(st) {
		if compacted, err := x.execCompaction(ctx, r); compacted || err != nil {
			return Stay(interval), err
		}
		return x.execIdle(ctx, r, st)
	}
	return x.execExit(ctx, r, st)
}

// execIdle nudges with a new turn of the same conversation, up to max_nudges times; then a human is asked.
func (x *execRunner) execIdle(ctx context.Context, r *store.Run, st *headless.Status) (Result, error) {
	m := x.cfg.Monitor
	if res, ok, err := x.spend.budgetStop(ctx, r, lastWords(st)); ok {
		return res, err
	}
	if r.Nudges >= m.MaxNudges {
		msg := fmt.Sprintf("The agent ended %d turns without finishing (%d nudges). Its last message:", r.Nudges+1, r.Nudges)
		return askInWords(msg, lastWords(st)), nil
	}
	if err := x.execTurn(ctx, r, x.prompts.nudgePrompt()); err != nil {
		return Result{}, fmt.Errorf("nudge: %w", err)
	}
	r.Nudges++
	r.State.NudgedAt = x.now()
	x.core.event(ctx, r, "nudge", fmt.Sprintf("nudged the agent with a new turn (%d/%d)", r.Nudges, m.MaxNudges))
	return Stay(m.Interval.Duration), nil
}

// execExit is onAgentExit for a headless turn that failed: a turn the host ended (turnCause) is resumed without
// spending one of monitor.max_restarts.
func (x *execRunner) execExit(ctx context.Context, r *store.Run, st *headless.Status) (Result, error) {
	worked, err := x.core.leftWork(ctx, r)
	if err != nil {
		return Result{}, err
	}
	how := x.turnEnd(st)
	if worked {
		x.core.event(ctx, r, "agent-exited", how+"; finalizing what it did")
		return Goto(StepFinalize), nil
	}
	c := turnCause(how, st, rebooted(r)) // restart_cause.go
	if x.core.mayRestart(r, c) {
		// Counted once the turn has started: a failed start is retried without using up a restart.
		if err := x.execTurn(ctx, r, x.prompts.resumePrompt(r)); err != nil {
			return Result{}, err
		}
		x.core.restarted(ctx, r, c, "resumed it")
		return Stay(x.cfg.Monitor.Interval.Duration), nil
	}
	r.Error = how
	r.State.LastScreen = lastWords(st)
	return Goto(StepFailed), nil
}

// recordTurnEnd appends the end of a turn to the run's events: always, with the stderr tail when it failed.
func (x *execRunner) recordTurnEnd(ctx context.Context, r *store.Run, st *headless.Status) {
	msg := fmt.Sprintf("turn %d: %s", r.State.ExecTurn, x.turnEnd(st))
	kind := EventTurn
	if !endedWell(st) {
		kind = EventAgentFailed
		if st != nil && strings.TrimSpace(st.StderrTail) != "" {
			msg += "; stderr:\n" + strings.TrimSpace(st.StderrTail)
		}
	}
	if st != nil && st.Usage != (headless.Usage{}) {
		msg += fmt.Sprintf(" (tokens: %d in, %d out)", st.Usage.InputTokens, st.Usage.OutputTokens)
	}
	x.core.event(ctx, r, kind, msg)
}

// endedWell reports whether a turn ended as the agent meant it to: it exited cleanly, or it reported its result
// and then did not exit until its supervisor ended it (headless.OutcomeLingered) — either way without an error.
func endedWell(st *headless.Status) bool {
	if st == nil || !st.Done || st.ResultError {
		return false
	}
	return st.Outcome == headless.OutcomeExited && st.ExitCode == 0 || st.Outcome == headless.OutcomeLingered
}

// turnEnd says in words how a turn ended.
func (x *execRunner) turnEnd(st *headless.Status) string {
	m := x.cfg.Monitor
	switch {
	case st == nil || !st.Done:
		return "the headless supervisor disappeared before the turn ended"
	case st.Outcome == headless.OutcomeIdleTimeout:
		return fmt.Sprintf("the agent was killed after %s without output or any sign of work (monitor.exec_idle_timeout)",
			m.ExecIdleTimeout.Duration)
	case st.Outcome == headless.OutcomeTurnTimeout:
		return fmt.Sprintf("the agent was killed after a turn of %s (monitor.exec_turn_timeout)", m.ExecTurnTimeout.Duration)
	case st.Outcome == headless.OutcomeStopped:
		return "the agent was stopped"
	case st.Outcome == headless.OutcomeLingered && !st.ResultError:
		return fmt.Sprintf("the agent ended its turn (it had not exited %s after its result: ended)", headless.DefaultExitGrace)
	case st.Outcome == headless.OutcomeLingered:
		return fmt.Sprintf("the agent ended its turn with an error (%s; it had not exited %s after it: ended)", st.ResultStatus, headless.DefaultExitGrace)
	case st.Outcome == headless.OutcomeStartFailed:
		return "the agent could not be started"
	case st.ExitCode != 0:
		return fmt.Sprintf("the agent exited with status %d", st.ExitCode)
	case st.ResultError:
		return fmt.Sprintf("the agent ended its turn with an error (%s)", st.ResultStatus)
	}
	return "the agent ended its turn"
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
func (x *execRunner) endExec(ctx context.Context, r *store.Run) error {
	st := x.execStatus(ctx, r)
	if x.execAlive(ctx, r) {
		proc := headless.ParseProc(r.State.ExecProc)
		if err := proc.Signal(syscall.SIGTERM); err != nil {
			return fmt.Errorf("stop the headless supervisor: %w", err)
		}
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		deadline := time.NewTimer(5 * time.Second)
		defer deadline.Stop()
	wait:
		for x.execAlive(ctx, r) {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-deadline.C:
				_ = proc.Signal(syscall.SIGKILL)
				// The run may not know the supervisor that holds the lock (an ace killed right after starting
				// it): its status names it, once it has written one.
				if cur := x.execStatus(ctx, r); cur != nil {
					_ = headless.Proc{PID: cur.SupervisorPID, Start: cur.SupervisorStart}.Signal(syscall.SIGKILL)
				}
				break wait
			case <-t.C:
			}
		}
		if x.execAlive(ctx, r) {
			return fmt.Errorf("the headless supervisor of %s#%d does not stop (lock %s)", r.Repo, r.Issue, x.execLockPath(r))
		}
		x.core.event(ctx, r, "session", fmt.Sprintf("stopped the headless %s (supervisor pid %d)", r.Agent, proc.PID))
	}
	if st != nil && !st.Done {
		st = x.execStatus(ctx, r) // what the supervisor wrote as it stopped
	}
	x.killAgent(st)
	// The run is over: its turn files go (the transcript and the debug log stay, as a tmux transcript does).
	for _, f := range []string{x.execStatusPath(r), x.execLockPath(r), x.execPulsePath(r)} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			x.log.WarnContext(ctx, "remove headless turn file", "run", r.ID, "file", f, "err", err)
		}
	}
	return nil
}

// Abandon stops a headless turn that this step started but could not record, because another process
// ended the run meanwhile (ace stop): nobody else knows of that supervisor.
func (x *execRunner) Abandon(mine, fresh *store.Run) {
	started := mine.State.ExecProc
	if !fresh.Status.Terminal() || started == "" || started == fresh.State.ExecProc { // "": not a headless run
		return
	}
	if err := headless.ParseProc(started).Signal(syscall.SIGTERM); err != nil {
		x.log.Warn("stop an abandoned headless turn", "run", mine.ID, "err", err)
	}
}

// execCompaction is compaction for a headless run, whose idle moment is the end of a turn: when the JSONL
// transcript grew past the threshold, the next turn of the conversation is the agent's compact command. When
// that turn has ended the run is idle as after any turn: the nudge that follows counts against max_nudges, so an
// agent whose every turn outgrows the threshold cannot loop between compacting and continuing. It reports
// whether it started a turn.
func (x *execRunner) execCompaction(ctx context.Context, r *store.Run) (bool, error) {
	size, _ := fileSize(r.State.Transcript) // unreadable: counted as empty, so no compaction is asked for
	if r.State.Compacting {
		r.State.Compacting = false
		r.State.CompactAt, r.State.HasCompactAt = size, true // the compaction's own output does not count
		x.core.event(ctx, r, "compact", "the agent compacted its context")
		return false, nil
	}
	prof, err := x.agent.profile(r)
	if err != nil || prof.CompactCommand == "" {
		return false, err
	}
	offset := r.State.CompactAt // none yet (0): the transcript started with the run
	if !agents.CompactDue(size, offset, x.cfg.Monitor.CompactThreshold, agents.StateReady) {
		return false, nil
	}
	if err := x.execTurn(ctx, r, prof.CompactCommand); err != nil {
		return false, err
	}
	r.State.Compacting = true
	x.core.event(ctx, r, "compact", fmt.Sprintf("asked the agent to compact its context (%s): its transcript grew %d KiB",
		prof.CompactCommand, agents.Growth(size, offset)>>10))
	return true, nil
}

// limitInTurn looks at a headless turn that ended for a limit: the stream's own limit events first, then the
// adapter's patterns over its last words and exit code. A turn is acted on once (Limit.Seen is its number).
func (x *execRunner) limitInTurn(ctx context.Context, r *store.Run, st *headless.Status) (Result, bool, error) {
	if st == nil || !st.Done || st.Turn <= limitSeen(r) {
		return Result{}, false, nil
	}
	prof, err := x.agent.profile(r)
	if err != nil {
		return Result{}, true, err
	}
	l, found := prof.LimitInStream(lastWords(st), st.ExitCode, x.now())
	if st.Limited {
		found = true
		if !st.LimitResetsAt.IsZero() {
			l.ResetsAt = st.LimitResetsAt // exact, where the text is to the minute
		}
		if l.Message == "" {
			l.Message = firstLineOf(lastWords(st))
		}
	}
	if !found {
		return Result{}, false, nil
	}
	if prof.Limits().UnsavedUntilReply && st.Turn == 1 && st.Usage.OutputTokens == 0 {
		limitState(r).StartOver = true // the conversation the task's turn began was never saved: execTurn
	}
	return sawLimit(l, st.Turn), true, nil // the monitor decides (limits.go)
}
