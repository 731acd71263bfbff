package workflow

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/livehost"
	"github.com/aceworks/ace/pkg/store"
)

// readTranscript takes in what the host recorded since the monitor's last look: the conversation's id (for a
// resume), what each turn spent, a usage limit (the run pauses) and a failed handshake (the run goes to the tmux
// runner). ok says the run moves on at once with res.
func (l *liveRunner) readTranscript(ctx context.Context, r *store.Run) (res Result, ok bool, err error) {
	_, _, _, path, _ := l.liveFiles(r)
	recs, err := livehost.ReadTranscript(path, r.State.LiveSeq)
	if err != nil {
		// A transcript the agent replaced (a link, a FIFO, a huge file) is no record of the conversation.
		return Result{}, false, l.core.needFile(ctx, r, "read the live transcript", err)
	}
	for _, rec := range recs {
		r.State.LiveSeq = rec.Seq
		switch rec.Kind {
		case livehost.KindSession:
			r.AgentSessionID = rec.SessionID
		case livehost.KindUser:
			if rec.From == livehost.FromAce && !r.State.PromptDelivered && !r.State.LivePromptAt.IsZero() &&
				!rec.Time.Before(r.State.LivePromptAt) {
				// ace sent the prompt and was killed before it recorded that: the conversation has it.
				return l.delivered(ctx, r, "the conversation had the prompt before ace restarted"), true, nil
			}
		case livehost.KindTurnDone:
			if rec.Usage != nil && !l.lumped(r) {
				l.spend.addTurn(r, *rec.Usage, rec.Model)
			}
			r.State.LiveIdleSince = rec.Time
			kind := EventTurn
			if rec.Status == "failed" {
				kind = EventAgentFailed
			}
			l.core.event(ctx, r, kind, fmt.Sprintf("turn ended: %s%s", rec.Status, usageNote(rec.Usage)))
		case livehost.KindLimit:
			l := agents.Limit{Message: rec.Text, ResetsAt: rec.ResetsAt}
			return sawLimit(l, int(rec.Seq)), true, nil // the node decides (limits.go)
		case livehost.KindHandshakeFailed:
			return l.fallBack(ctx, r, rec.Text)
		}
		if res, ok, err := l.retryRecord(ctx, r, rec); ok || err != nil { // reach_runners.go
			return res, true, err
		}
	}
	return Result{}, false, nil
}

func usageNote(u *store.Usage) string {
	if u == nil || *u == (store.Usage{}) {
		return ""
	}
	return fmt.Sprintf(" (tokens: %d in, %d out)", u.InputTokens, u.OutputTokens)
}

// fallBack gives a run whose CLI failed the live protocol's handshake to the tmux runner, in the same working
// copy, with a warning on the run: the CLI works, only not live (a version, a setting).
func (l *liveRunner) fallBack(ctx context.Context, r *store.Run, why string) (Result, bool, error) {
	if err := l.panes.stop(ctx, r); err != nil {
		return Result{}, true, err
	}
	r.Runner, r.Session, r.AgentSessionID = store.RunnerTmux, "", ""
	r.State.PromptDelivered, r.State.DeliverSince = false, time.Time{}
	l.core.event(ctx, r, EventLiveFallback, "the CLI's live protocol failed its handshake ("+firstLine(why)+
		"): the run goes on in the tmux runner")
	return Goto(StepStartSession), true, nil
}

// Observe is the monitor's look at a live run that is not busy: what waits for a human (a permission, a question)
// is asked on the issue once; an idle conversation is nudged (once per turn, up to max_nudges); a host that exited
// is started again in its conversation a bounded number of times, after its work is kept if it left some.
func (l *liveRunner) Observe(ctx context.Context, r *store.Run) (Result, error) {
	m := l.cfg.Monitor
	if res, ok, err := l.readTranscript(ctx, r); ok || err != nil {
		return res, err
	}
	l.spend.refreshUsage(ctx, r, false) // a lumped CLI's session files (readUsage); the others' comes per turn
	st, err := l.client(r).Status(ctx)
	if errors.Is(err, livehost.ErrNotRunning) {
		return l.exited(ctx, r)
	}
	if err != nil {
		return Result{}, err
	}
	if len(st.Pending) > 0 {
		p := st.Pending[0]
		if p.ID == r.State.LiveAsked {
			return Stay(m.Interval.Duration), nil // asked already; the human's answer comes through waiting_input
		}
		return askFor(pendingQuestion(p), "").then(func() { r.State.LiveAsked = p.ID }), nil
	}
	if st.Busy {
		return Stay(m.Interval.Duration), nil
	}
	if l.core.timedOut(r, "") {
		return Goto(StepFailed), nil
	}
	if r.State.LiveIdleSince.IsZero() || !r.State.LiveIdleSince.After(r.State.NudgedAt) {
		return Stay(m.Interval.Duration), nil // no turn has ended since the last nudge
	}
	screen, _ := l.panes.screen(ctx, r, 0)
	if res, ok, err := l.spend.budgetStop(ctx, r, screen); ok {
		return res, err
	}
	if r.Nudges >= m.MaxNudges {
		msg := fmt.Sprintf("The agent ended %d turns without finishing (%d nudges). Its conversation:", r.Nudges+1, r.Nudges)
		return askFor(msg, screen), nil
	}
	if err := l.client(r).Send(ctx, l.prompts.nudgePrompt()); err != nil {
		return Result{}, fmt.Errorf("nudge: %w", err)
	}
	r.Nudges++
	r.State.NudgedAt = l.now()
	l.core.event(ctx, r, "nudge", fmt.Sprintf("nudged the live conversation (%d/%d)", r.Nudges, m.MaxNudges))
	return Stay(m.Interval.Duration), nil
}

// pendingQuestion is what the issue is asked for a permission or a question the conversation waits on.
func pendingQuestion(p livehost.Record) string {
	if p.Kind == livehost.KindPermission {
		q := fmt.Sprintf("The agent asks for permission to use %s", p.Tool)
		if p.Text != "" {
			q += " (" + p.Text + ")"
		}
		if p.Input != "" {
			q += ":\n\n" + p.Input
		}
		return q + "\n\nAnswer yes or no."
	}
	q := strings.TrimSpace(p.Text)
	for i, o := range p.Options {
		q += fmt.Sprintf("\n%d. %s", i+1, o)
	}
	if len(p.Options) > 0 {
		q += "\n\nAnswer with an option's number or words, or in your own words."
	}
	return q
}

// exited handles a host that is gone: what the agent did is kept (finalize), else the conversation is started
// again — a bounded number of times when its CLI ended by itself (restart_cause.go) — else the run fails with the
// end of its screen.
func (l *liveRunner) exited(ctx context.Context, r *store.Run) (Result, error) {
	screen, _ := l.panes.screen(ctx, r, 0)
	worked, err := l.core.leftWork(ctx, r)
	if err != nil {
		return Result{}, err
	}
	if worked {
		l.core.event(ctx, r, "agent-exited", "the live conversation ended; finalizing what the agent did")
		return Goto(StepFinalize), nil
	}
	pane, found, err := l.panes.pane(ctx, r.Session)
	if err != nil {
		return Result{}, err
	}
	c := liveCause(pane, found, func() string { return l.panes.sessionGone(ctx, r) })
	if l.core.mayRestart(r, c) {
		if err := l.restart(ctx, r); err != nil {
			return Result{}, err
		}
		l.core.restarted(ctx, r, c, "resumed it")
		r.State.PromptDelivered, r.State.Resume = false, true
		return Goto(StepDeliver), nil
	}
	r.Error = fmt.Sprintf("the live conversation ended %d times without making changes", r.Restarts+1)
	r.State.LastScreen = screen
	return Goto(StepFailed), nil
}

// yesNo reads a human's answer to a permission.
func yesNo(s string) (allow, ok bool) {
	switch strings.ToLower(strings.Trim(strings.TrimSpace(s), ".!")) {
	case "y", "yes", "allow", "ok", "approve", "approved", "1":
		return true, true
	case "n", "no", "deny", "refuse", "reject", "2":
		return false, true
	}
	return false, false
}

// lumped reports whether the run's CLI reports a live turn's input with its cache reads in it: its usage is then
// read from the CLI's session files (readUsage), as a tmux run's is.
func (l *liveRunner) lumped(r *store.Run) bool {
	prof, err := l.agent.profile(r)
	return err == nil && prof.LiveUsageLumped()
}

// readUsage reads a lumped CLI's usage from its session files (see lumped); the others' comes with each turn.
func (l *liveRunner) readUsage(ctx context.Context, r *store.Run) {
	if l.lumped(r) {
		l.spend.sessionUsage(ctx, r)
	}
}
