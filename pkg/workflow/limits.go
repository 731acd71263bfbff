package workflow

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
)

// usageLimits acts on the usage-limit decision (limits_decide.go): it pauses runs whose agent hit a usage limit,
// resumes them at the reset, and sends a run to the handover step (node_handover.go) when a fallback agent is to
// take it.
type usageLimits struct {
	core    limitsHost
	cfg     *config.Config // limits, agent.default and agent.fallback, monitor.interval
	now     clock
	log     *slog.Logger
	runs    runLister                                 // the other runs paused at a limit (agentLimits)
	profile func(name string) (agents.Profile, error) // whether a fallback agent resolves
	status  *reporter                                 // the status comment of a pause, a resume
	slots   *slots                                    // the slot a resumed run takes back
}

// limitsHost is what the usage limits need of the engine's core: the run's events, its runner and what the node
// does with what the runner reports (a resume's follow-up round), and the agent an issue would get.
type limitsHost interface {
	event(ctx context.Context, r *store.Run, kind EventKind, msg string)
	runner(r *store.Run) Runner
	reported(ctx context.Context, r *store.Run, res Result, err error) (Result, error)
	labelChoice(labels []string) (agent, model string)
	autoAgent(ctx context.Context, repo string) (agent, why string)
}

// Usage limits. An agent whose account hit a usage or rate limit is not idle: nudging it only walks into the
// same wall and then pings a human for nothing. The run pauses instead (status paused_limit, its job snoozed
// until State.ResumeAt), answers the limit menu the CLI opened with the key that keeps the user's choice, and at
// the reset resumes the same conversation with a short message. A limit belongs to the account, i.e. the
// agent: every run on it pauses with the first, and dispatch starts no run on it until the reset.

// gate is the monitor's first look at limits: a paused run waits for its reset, then resumes; an active run
// whose agent is at a limit by another run's account pauses with it. ok is false when the monitor goes on as
// usual.
func (ul *usageLimits) gate(ctx context.Context, r *store.Run) (res Result, ok bool, err error) {
	d, err := ul.decide(ctx, r, nil)
	if err != nil || d.Act == limitNone {
		return Result{}, false, err
	}
	res, err = ul.act(ctx, r, d)
	return res, true, err
}

// reported acts on a limit a runner saw (Result.limit), for Engine.reported (step.go); anything else
// passes through.
func (ul *usageLimits) reported(ctx context.Context, r *store.Run, res Result, err error) (Result, error) {
	if err != nil || res.limit == nil {
		return res, err
	}
	d, err := ul.decide(ctx, r, res.limit)
	if err != nil {
		return Result{}, err
	}
	return ul.act(ctx, r, d)
}

// decide gathers what decideLimit needs — the other runs' limits, whether a fallback agent resolves — and asks it.
func (ul *usageLimits) decide(ctx context.Context, r *store.Run, report *limitReport) (limitDecision, error) {
	others, err := ul.agentLimits(ctx, r.ID)
	if err != nil {
		return limitDecision{}, err
	}
	usable := func(agent string) error { _, err := ul.profile(agent); return err }
	return decideLimit(limitCase{Run: r, Report: report, Now: ul.now(), Limits: ul.cfg.Limits, Agent: ul.cfg.Agent,
		Others: others, Usable: usable}), nil
}

// act does what d says: the events, the status comment, the run's pause, resume or handover.
func (ul *usageLimits) act(ctx context.Context, r *store.Run, d limitDecision) (Result, error) {
	switch d.Act {
	case limitResume:
		return ul.resume(ctx, r)
	case limitFallBack:
		return ul.fallBack(r, d), nil
	case limitPause:
		if d.Paused {
			return Stay(d.Wait), nil // the pause said why no fallback agent could take the run
		}
		if len(d.NoFallback) > 0 {
			ul.core.event(ctx, r, EventFallback, fmt.Sprintf("%s, but no agent of agent.fallback can take the run (%s): it pauses",
				limitWhy(r.Agent, d.Until, d.Shared), strings.Join(d.NoFallback, "; ")))
		}
		return ul.pause(ctx, r, d), nil
	}
	return Result{}, nil
}

// pause puts the run on hold until d.Until, at the monitor.
func (ul *usageLimits) pause(ctx context.Context, r *store.Run, d limitDecision) Result {
	now := ul.now()
	ls := limitState(r)
	if d.Backoff {
		ls.Pauses++
	}
	ls.Message, ls.Shared, ls.PausedAt, ls.Seen = d.Limit.Message, d.Shared, now, d.Seen
	r.State.ResumeAt = resumeAt(d.Until)
	why := fmt.Sprintf("%s hit a usage limit", r.Agent)
	if d.Shared {
		why = fmt.Sprintf("another run on %s hit its usage limit", r.Agent)
	}
	when := r.State.ResumeAt.Format(time.RFC3339)
	ul.core.event(ctx, r, EventLimit, fmt.Sprintf("paused: %s (%q); resumes at %s", why, d.Limit.Message, when))
	detail := ""
	if d.Limit.Message != "" {
		detail = "The agent said:\n\n" + quote(d.Limit.Message)
	}
	view := statusView{Status: store.StatusPausedLimit, Headline: fmt.Sprintf("paused: %s; resumes at %s", why, when), Detail: detail}
	if err := ul.status.postStatus(ctx, r, view); err != nil {
		ul.log.WarnContext(ctx, "status comment of a paused run", "run", r.ID, "err", err)
	}
	res := Stay(d.Wait).With(store.StatusPausedLimit)
	if Step(r.Step) != StepMonitor {
		res.Next = StepMonitor // a pause holds the agent at the monitor (a limit met delivering, a handover failed)
	}
	return res
}

// fallBack sends the run to the handover step with the handover it is to make (State.Fallback.Pending): a crash
// before it is made makes it at the next visit.
func (ul *usageLimits) fallBack(r *store.Run, d limitDecision) Result {
	ls := limitState(r) // the limit acted on, should the handover fail and the run pause (handoverFailed)
	if d.Backoff {
		ls.Pauses++
	}
	ls.Message, ls.Shared, ls.Seen = d.Limit.Message, d.Shared, d.Seen
	if r.State.Fallback == nil {
		r.State.Fallback = &store.FallbackState{}
	}
	r.State.Fallback.Pending = &store.Handover{From: r.Agent, To: d.To, Until: d.Until.UTC(), Message: d.Limit.Message,
		Shared: d.Shared}
	return Goto(StepHandover).With(store.StatusActive)
}

// handoverFailed pauses a run whose handover h could not be made, as it would have paused without a fallback
// agent: at the monitor, until the reset it was to leave. A run that was paused already waits on, quietly.
func (ul *usageLimits) handoverFailed(ctx context.Context, r *store.Run, h store.Handover, paused bool) Result {
	r.State.Fallback.Pending = nil
	now := ul.now()
	c := limitCase{Limits: ul.cfg.Limits, Agent: ul.cfg.Agent}
	if paused {
		return Result{Next: StepMonitor, Wait: c.pausedWait(r.State.ResumeAt.Sub(now)), Status: store.StatusPausedLimit}
	}
	d := limitDecision{Act: limitPause, Until: h.Until, Limit: agents.Limit{Message: h.Message}, Shared: h.Shared,
		Seen: limitSeen(r), Wait: c.pausedWait(resumeAt(h.Until).Sub(now))}
	return ul.pause(ctx, r, d)
}

// resume ends a pause at its reset: the same conversation gets limits.continue (typed into the tmux session; the
// next turn of a headless one). A limit still there pauses the run again at the next look.
func (ul *usageLimits) resume(ctx context.Context, r *store.Run) (Result, error) {
	// The agent works again: it takes its slot back first (slots.go), and starts again in its conversation, the
	// continue its first message, when it was released meanwhile.
	ok, err := ul.slots.acquire(ctx, r)
	if err != nil || !ok {
		return Stay(ul.slots.slotWait()), err
	}
	now := ul.now()
	ls := limitState(r)
	msg := ul.cfg.Limits.Continue
	next := Stay(ul.cfg.Monitor.Interval.Duration)
	if r.State.Released {
		r.State.ResumeWith = joinMessages(r.State.ResumeWith, msg) // after what was sent to it meanwhile (sent.go)
		next, err = ul.core.runner(r).FollowUp(ctx, r, msg, "resumed after the usage limit")
		if next, err = ul.core.reported(ctx, r, next, err); err != nil {
			return Result{}, err
		}
	} else if err := ul.core.runner(r).Continue(ctx, r, msg); err != nil {
		return Result{}, err
	}
	if !r.State.MonitorSince.IsZero() && !ls.PausedAt.IsZero() {
		r.State.MonitorSince = r.State.MonitorSince.Add(now.Sub(ls.PausedAt)) // a pause is not the agent's time
	}
	r.State.ResumeAt = time.Time{}
	ls.ResumedAt = now
	r.State.NudgedAt = now // the continue is the nudge of this stretch; idleness counts from here
	ul.core.event(ctx, r, EventLimit, fmt.Sprintf("resumed after the usage limit with %q", msg))
	if err := ul.status.postStatus(ctx, r, statusView{Status: store.StatusActive, Headline: "resumed after the usage limit; working"}); err != nil {
		ul.log.WarnContext(ctx, "status comment of a resumed run", "run", r.ID, "err", err)
	}
	return next.With(store.StatusActive), nil
}

// agentLimits is, for each agent, the latest reset of the limits the runs other than except are paused at (the
// limit is the account's), or left it at for another agent (agent.fallback), with what the agent said.
func (ul *usageLimits) agentLimits(ctx context.Context, except int64) (map[string]agentLimit, error) {
	statuses := []store.Status{store.StatusPausedLimit}
	if len(ul.cfg.Agent.Fallback) > 0 {
		statuses = append(statuses, store.StatusActive, store.StatusWaitingInput) // runs that fell back
	}
	runs, err := ul.runs.ListRuns(ctx, store.Filter{Statuses: statuses})
	if err != nil {
		return nil, fmt.Errorf("list paused runs: %w", err)
	}
	limits := map[string]agentLimit{}
	later := func(agent string, until time.Time, msg string) {
		if until.After(limits[agent].Until) {
			limits[agent] = agentLimit{Until: until, Message: msg}
		}
	}
	for _, o := range runs {
		if o.ID == except {
			continue
		}
		for _, h := range leftAtLimit(o) {
			later(h.From, h.Until, h.Message)
		}
		// Only a run that hit the limit itself says when it ends: runs paused with it do not extend it.
		if o.Status == store.StatusPausedLimit && o.State.Limit != nil && !o.State.Limit.Shared {
			later(o.Agent, o.State.ResumeAt, o.State.Limit.Message)
		}
	}
	return limits, nil
}

// leftAtLimit is the handovers by which run o left an agent at a usage limit it hit itself, the one it is about
// to make included: the limit is the account's, and o no longer pauses to say so.
func leftAtLimit(o *store.Run) []store.Handover {
	f := o.State.Fallback
	if f == nil {
		return nil
	}
	var left []store.Handover
	for _, h := range f.Handovers {
		if !h.Shared {
			left = append(left, h)
		}
	}
	if h := f.Pending; h != nil && !h.Shared {
		left = append(left, *h)
	}
	return left
}

// agentPaused reports whether the agent an issue's labels choose is paused at a usage limit: dispatch starts no
// run on it until the reset.
func (ul *usageLimits) agentPaused(ctx context.Context, repo string, labels []string) (bool, error) {
	agent, _ := ul.core.labelChoice(labels)
	if agent == "" {
		agent = ul.cfg.Agent.Default
	}
	if agent == config.AgentAuto {
		agent, _ = ul.core.autoAgent(ctx, repo)
	}
	limits, err := ul.agentLimits(ctx, 0)
	if err != nil {
		return false, err
	}
	return limits[agent].Until.After(ul.now()), nil
}

// limitWhy says why a run leaves (or would leave) its agent: its limit, or another run's on the same agent.
func limitWhy(agent string, until time.Time, shared bool) string {
	at := until.UTC().Format(time.RFC3339)
	if shared {
		return fmt.Sprintf("another run on %s hit its usage limit, which resets at %s", agent, at)
	}
	return fmt.Sprintf("%s hit a usage limit that resets at %s", agent, at)
}

func firstLineOf(s string) string {
	for i, c := range s {
		if c == '\n' {
			return s[:i]
		}
	}
	return s
}
