package workflow

import (
	"fmt"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
)

// The usage-limit decision. decideLimit reads what is true now — the run, a limit its runner saw, the settings,
// the other agents' limits — and says what to do: nothing, pause, fall back to another agent, or resume. It has
// no effects: the limit part (limits.go) gathers the facts first and acts on the answer, and the handover to a
// fallback agent is a step of its own (node_handover.go).

// limitAct is what decideLimit says to do about a usage limit.
type limitAct int

const (
	limitNone     limitAct = iota // no limit holds the run: the monitor goes on as usual
	limitPause                    // the run pauses (or stays paused) until Until
	limitFallBack                 // the run goes to agent To (the handover step)
	limitResume                   // the reset has come: the agent continues its conversation
)

// limitReport is what a runner saw of a usage limit: the limit, and its mark (a count of screen messages, a
// turn's number, a record's sequence), which tells it from one ace acted on already (Limit.Seen).
type limitReport struct {
	Limit agents.Limit
	Seen  int
}

// agentLimit is until when an agent is at a usage limit by other runs' account, and what it said.
type agentLimit struct {
	Until   time.Time
	Message string
}

// limitCase is what decideLimit decides from.
type limitCase struct {
	Run    *store.Run
	Report *limitReport // a limit the run's runner saw now; nil when none
	Now    time.Time
	Limits config.LimitsConfig
	Agent  config.AgentDefaults // fallback and fallback_after
	// Others is each agent's limit as the other runs tell it (limits.go: agentLimits).
	Others map[string]agentLimit
	// Usable says why an agent of agent.fallback cannot run (its profile does not resolve); nil when it can.
	Usable func(agent string) error
}

// limitDecision is decideLimit's answer.
type limitDecision struct {
	Act limitAct
	// Until: a pause's end (its reset plus limits.resume_margin, or a backoff), or the reset of the limit a
	// fallback leaves behind.
	Until time.Time
	To    string // limitFallBack: the agent that takes the run over
	// Limit is what the agent said, Seen the report's mark; Shared is set when another run on the agent hit it.
	Limit  agents.Limit
	Seen   int
	Shared bool
	// Backoff is set when Until is a backoff (no reset given, or it has passed): the pause counts in a row.
	Backoff bool
	// Paused is set when the run was paused already: it only waits on, Wait more, quietly.
	Paused bool
	Wait   time.Duration
	// NoFallback says why no agent of agent.fallback could take the run, when one was looked for.
	NoFallback []string
}

// decideLimit is what to do about the run's usage limits now. A paused run resumes at its reset, and before it,
// while the reset is more than agent.fallback_after away, goes to a fallback agent that can take it. An active
// run whose runner saw a limit, or whose agent another run found at a limit, pauses until the reset (plus
// limits.resume_margin; a backoff when the agent gave none or it passed), or goes to a fallback agent when that
// pause would last longer than agent.fallback_after.
func decideLimit(c limitCase) limitDecision {
	r := c.Run
	if r.Status == store.StatusPausedLimit {
		wait := r.State.ResumeAt.Sub(c.Now)
		if wait <= 0 {
			return limitDecision{Act: limitResume}
		}
		d := limitDecision{Act: limitPause, Until: r.State.ResumeAt, Paused: true, Wait: c.pausedWait(wait)}
		if ls := r.State.Limit; ls != nil {
			d.Limit, d.Shared, d.Seen = agents.Limit{Message: ls.Message}, ls.Shared, ls.Seen
		}
		return c.orFallBack(d)
	}
	var d limitDecision
	if l := c.Report; l != nil {
		d = limitDecision{Act: limitPause, Limit: l.Limit, Seen: l.Seen, Until: l.Limit.ResetsAt.Add(c.Limits.ResumeMargin.Duration)}
		if l.Limit.ResetsAt.IsZero() || !d.Until.After(c.Now) {
			d.Until = c.Now.Add(limitBackoff(c.Limits.Backoff.Duration, c.Limits.MaxBackoff.Duration, limitPauses(r)))
			d.Backoff = true
		}
	} else if o := c.Others[r.Agent]; o.Until.After(c.Now) {
		d = limitDecision{Act: limitPause, Until: o.Until, Limit: agents.Limit{Message: o.Message}, Shared: true, Seen: limitSeen(r)}
	} else {
		return limitDecision{Act: limitNone}
	}
	d.Wait = c.pausedWait(resumeAt(d.Until).Sub(c.Now))
	return c.orFallBack(d)
}

// orFallBack is pause d, or a fallback instead when the pause would last longer than agent.fallback_after and an
// agent of agent.fallback can take the run.
func (c limitCase) orFallBack(d limitDecision) limitDecision {
	if len(c.Agent.Fallback) == 0 || d.Until.Sub(c.Now) <= c.Agent.FallbackAfter.Duration {
		return d
	}
	limitedUntil := func(agent string) (time.Time, error) { return c.Others[agent].Until, nil }
	to, skipped, _ := pickFallback(c.Agent.Fallback, c.Run, c.Now, c.Usable, limitedUntil) // errorless lookups
	if to == "" {
		d.NoFallback = skipped
		return d
	}
	d.Act, d.To = limitFallBack, to
	return d
}

// resumeAt is when a run paused until at resumes: in whole seconds, never before at.
func resumeAt(at time.Time) time.Time {
	t := at.UTC().Truncate(time.Second)
	if t.Before(at) {
		t = t.Add(time.Second)
	}
	return t
}

// pausedWait is how long a paused run whose reset is wait away sleeps before it looks again: until the reset, or,
// while a fallback agent could still take it, limits.backoff (at least a second).
func (c limitCase) pausedWait(wait time.Duration) time.Duration {
	ac := c.Agent
	if len(ac.Fallback) == 0 || wait <= ac.FallbackAfter.Duration {
		return wait
	}
	return min(wait-ac.FallbackAfter.Duration, max(c.Limits.Backoff.Duration, time.Second))
}

// limitBackoff is base, doubled for each pause in a row, capped at most.
func limitBackoff(base, most time.Duration, pauses int) time.Duration {
	d := base
	for i := 0; i < pauses && d < most; i++ {
		d *= 2
	}
	return min(d, most)
}

// pickFallback is the first agent of list that may take run r at now: not its agent, not one it has had, one
// that can run (usable: its profile resolves) and is free of limits (limitedUntil: until when it is at one, zero
// when it is not; its error ends the choice). skipped says why each agent before it was passed over.
func pickFallback(list []string, r *store.Run, now time.Time, usable func(agent string) error,
	limitedUntil func(agent string) (time.Time, error)) (agent string, skipped []string, err error) {
	for _, name := range list {
		if name == r.Agent || r.State.Fallback.Had(name) {
			skipped = append(skipped, name+" has had the run")
			continue
		}
		if err := usable(name); err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		until, err := limitedUntil(name)
		if err != nil {
			return "", skipped, err
		}
		if until.After(now) {
			skipped = append(skipped, fmt.Sprintf("%s is at a usage limit until %s", name, until.UTC().Format(time.RFC3339)))
			continue
		}
		return name, skipped, nil
	}
	return "", skipped, nil
}

// limitPauses is how many pauses in a row the run has had without a reset to wait for.
func limitPauses(r *store.Run) int {
	if r.State.Limit == nil {
		return 0
	}
	return r.State.Limit.Pauses
}
