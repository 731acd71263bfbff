package workflow

import (
	"context"
	"fmt"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
)

// usageLimits pauses runs whose agent hit a usage limit, resumes them at the reset, and hands a run to a fallback
// agent when the reset is far away (limits_fallback.go).
type usageLimits struct{ e *Engine }

// Usage limits. An agent whose account hit a usage or rate limit is not idle: nudging it only walks into the
// same wall and then pings a human for nothing. The run pauses instead (status paused_limit, its job snoozed
// until State.ResumeAt), answers the limit menu the CLI opened with the key that keeps the user's choice, and at
// the reset resumes the same conversation with a short message. A limit belongs to the account, i.e. the
// agent: every run on it pauses with the first, and dispatch starts no run on it until the reset.

// limitGate is the monitor's first look at limits: a paused run waits for its reset, then resumes; an active run
// whose agent is paused by another run's limit pauses with it. ok is false when the monitor goes on as usual.
func (ul *usageLimits) limitGate(ctx context.Context, r *store.Run) (res Result, ok bool, err error) {
	e := ul.e
	now := e.o.Now()
	if r.Status == store.StatusPausedLimit {
		if wait := r.State.ResumeAt.Sub(now); wait > 0 {
			return ul.whilePaused(ctx, r, wait), true, nil // Stay(wait), unless a fallback agent takes the run
		}
		return ul.resumeFromLimit(ctx, r)
	}
	until, msg, err := ul.agentPausedUntil(ctx, r.Agent, r.ID)
	if err != nil || !until.After(now) {
		return Result{}, false, err
	}
	return ul.pauseAt(ctx, r, agents.Limit{Message: msg}, until, true, limitSeen(r)), true, nil
}

// pause puts the run on hold until the limit's reset (plus limits.resume_margin), or a backoff when the agent
// gave none or the reset has passed already (a resume refused again).
func (ul *usageLimits) pause(ctx context.Context, r *store.Run, l agents.Limit, shared bool, seen int) Result {
	e := ul.e
	lc := e.cfg.Limits
	now := e.o.Now()
	at := l.ResetsAt.Add(lc.ResumeMargin.Duration)
	if l.ResetsAt.IsZero() || !at.After(now) {
		at = now.Add(limitBackoff(lc.Backoff.Duration, lc.MaxBackoff.Duration, limitState(r).Pauses))
		limitState(r).Pauses++
	}
	return ul.pauseAt(ctx, r, l, at, shared, seen)
}

func (ul *usageLimits) pauseAt(ctx context.Context, r *store.Run, l agents.Limit, at time.Time, shared bool, seen int) Result {
	e := ul.e
	if res, ok := ul.fallBack(ctx, r, l, at, shared); ok { // agent.fallback: another agent instead of a long wait
		return res
	}
	now := e.o.Now()
	ls := limitState(r)
	ls.Message, ls.Shared, ls.PausedAt, ls.Seen = l.Message, shared, now, seen
	r.State.ResumeAt = at.UTC().Truncate(time.Second)
	if r.State.ResumeAt.Before(at) {
		r.State.ResumeAt = r.State.ResumeAt.Add(time.Second) // whole seconds, never before the reset
	}
	why := fmt.Sprintf("%s hit a usage limit", r.Agent)
	if shared {
		why = fmt.Sprintf("another run on %s hit its usage limit", r.Agent)
	}
	when := r.State.ResumeAt.Format(time.RFC3339)
	e.event(ctx, r, EventLimit, fmt.Sprintf("paused: %s (%q); resumes at %s", why, l.Message, when))
	detail := ""
	if l.Message != "" {
		detail = "The agent said:\n\n" + quote(l.Message)
	}
	view := statusView{Status: store.StatusPausedLimit, Headline: fmt.Sprintf("paused: %s; resumes at %s", why, when), Detail: detail}
	if err := e.status.postStatus(ctx, r, view); err != nil {
		e.log.WarnContext(ctx, "status comment of a paused run", "run", r.ID, "err", err)
	}
	return Stay(ul.pausedWait(r.State.ResumeAt.Sub(now))).With(store.StatusPausedLimit) // limits_fallback.go
}

// resumeFromLimit ends a pause at its reset: the same conversation gets limits.continue (typed into the tmux
// session; the next turn of a headless one). A limit still there pauses the run again at the next look.
func (ul *usageLimits) resumeFromLimit(ctx context.Context, r *store.Run) (Result, bool, error) {
	e := ul.e
	// The agent works again: it takes its slot back first (slots.go), and starts again in its conversation, the
	// continue its first message, when it was released meanwhile.
	ok, err := e.slots.acquire(ctx, r)
	if err != nil || !ok {
		return Stay(e.slots.slotWait()), true, err
	}
	now := e.o.Now()
	ls := limitState(r)
	msg := e.cfg.Limits.Continue
	next := Stay(e.cfg.Monitor.Interval.Duration)
	if r.State.Released {
		r.State.ResumeWith = joinMessages(r.State.ResumeWith, msg) // after what was sent to it meanwhile (sent.go)
		if next, err = e.runner(r).FollowUp(ctx, r, msg, "resumed after the usage limit"); err != nil {
			return Result{}, true, err
		}
	} else if err := e.runner(r).Continue(ctx, r, msg); err != nil {
		return Result{}, true, err
	}
	if !r.State.MonitorSince.IsZero() && !ls.PausedAt.IsZero() {
		r.State.MonitorSince = r.State.MonitorSince.Add(now.Sub(ls.PausedAt)) // a pause is not the agent's time
	}
	r.State.ResumeAt = time.Time{}
	ls.ResumedAt = now
	r.State.NudgedAt = now // the continue is the nudge of this stretch; idleness counts from here
	e.event(ctx, r, EventLimit, fmt.Sprintf("resumed after the usage limit with %q", msg))
	if err := e.status.postStatus(ctx, r, statusView{Status: store.StatusActive, Headline: "resumed after the usage limit; working"}); err != nil {
		e.log.WarnContext(ctx, "status comment of a resumed run", "run", r.ID, "err", err)
	}
	return next.With(store.StatusActive), true, nil
}

// agentPausedUntil is the latest reset of the limits other runs on agent are paused at (the limit is the
// account's), or left it at for another agent (agent.fallback), with what the agent said; zero when none is.
func (ul *usageLimits) agentPausedUntil(ctx context.Context, agent string, except int64) (time.Time, string, error) {
	e := ul.e
	statuses := []store.Status{store.StatusPausedLimit}
	if len(e.cfg.Agent.Fallback) > 0 {
		statuses = append(statuses, store.StatusActive, store.StatusWaitingInput) // runs that fell back: limits_fallback.go
	}
	runs, err := e.o.Store.ListRuns(ctx, store.Filter{Statuses: statuses})
	if err != nil {
		return time.Time{}, "", fmt.Errorf("list paused runs: %w", err)
	}
	var until time.Time
	msg := ""
	for _, o := range runs {
		if o.ID == except {
			continue
		}
		if u, m := leftAtLimit(o, agent); u.After(until) {
			until, msg = u, m
		}
		// Only a run that hit the limit itself says when it ends: runs paused with it do not extend it.
		if o.Status != store.StatusPausedLimit || o.Agent != agent || o.State.Limit == nil || o.State.Limit.Shared {
			continue
		}
		if o.State.ResumeAt.After(until) {
			until, msg = o.State.ResumeAt, o.State.Limit.Message
		}
	}
	return until, msg, nil
}

// limitBackoff is base, doubled for each pause in a row, capped at most.
func limitBackoff(base, most time.Duration, pauses int) time.Duration {
	d := base
	for i := 0; i < pauses && d < most; i++ {
		d *= 2
	}
	return min(d, most)
}

func firstLineOf(s string) string {
	for i, c := range s {
		if c == '\n' {
			return s[:i]
		}
	}
	return s
}

// limitState is the run's limit bookkeeping, made on first use.
func limitState(r *store.Run) *store.LimitState {
	if r.State.Limit == nil {
		r.State.Limit = &store.LimitState{}
	}
	return r.State.Limit
}

// limitSeen is the limit ace last acted on: a count of screen messages (tmux) or a turn number (headless).
func limitSeen(r *store.Run) int {
	if r.State.Limit == nil {
		return 0
	}
	return r.State.Limit.Seen
}

// agentPaused reports whether the agent an issue's labels choose is paused at a usage limit: dispatch starts no
// run on it until the reset.
func (ul *usageLimits) agentPaused(ctx context.Context, repo string, labels []string) (bool, error) {
	e := ul.e
	agent, _ := e.labelChoice(labels)
	if agent == "" {
		agent = e.cfg.Agent.Default
	}
	if agent == config.AgentAuto {
		agent, _ = e.autoAgent(ctx, repo)
	}
	until, _, err := ul.agentPausedUntil(ctx, agent, 0)
	return until.After(e.o.Now()), err
}
