package workflow

import (
	"context"
	"fmt"

	"github.com/aceworks/ace/pkg/store"
)

// handover gives the run to the fallback agent the monitor chose at a usage limit (State.Fallback.Pending):
// .ace/HANDOVER.md first, while the old agent's screen is still there, then the old agent stopped, then the run
// given the new agent and its runner, which start_session starts. A crash on the way makes the handover again at
// the next visit: each of its parts may be done twice. Nothing here fails the run: what goes wrong is recorded,
// and the run pauses as it would have without a fallback agent.
func (e *Engine) handover(ctx context.Context, r *store.Run) (Result, error) {
	f := r.State.Fallback
	if f == nil || f.Pending == nil {
		return Goto(StepMonitor).With(store.StatusActive), nil // nothing to hand over: the monitor looks again
	}
	h := *f.Pending
	// A run that was paused already looks again quietly: its pause said why it waits.
	quiet := !r.State.ResumeAt.IsZero()
	why := limitWhy(h.From, h.Until, h.Shared)
	pause := func(msg string) (Result, error) {
		if !quiet && msg != "" {
			e.event(ctx, r, EventFallback, msg)
		}
		return e.limits.handoverFailed(ctx, r, h, quiet), nil
	}
	prof, err := e.o.Profile(h.To)
	if err != nil {
		e.log.WarnContext(ctx, "fallback agent", "run", r.ID, "agent", h.To, "err", err)
		return pause("")
	}
	// What the old agent did, read before it is stopped (its screen); what cannot be read is said in its place.
	ws, err := e.openWork(ctx, r)
	if err != nil {
		err = fmt.Errorf("open working copy: %w", err)
	} else {
		so, soErr := ws.SoFar(ctx)
		tail, tailErr := transcriptTail(ctx, e.runner(r), e.o.Root, r)
		wc := workCopy(r)
		if err = e.needFile(ctx, r, "create .ace", wc.MkdirAll(".ace", 0o755)); err == nil {
			text := handoverText(r, h.To, why, ws.BaseCommit, so, soErr, tail, tailErr)
			err = e.needFile(ctx, r, "write "+handoverFile, wc.WriteFile(handoverFile, []byte(text), 0o644))
		}
	}
	if err != nil {
		e.log.WarnContext(ctx, "write the handover", "run", r.ID, "err", err)
		return pause(fmt.Sprintf("%s; the handover to %s could not be written (%v): the run pauses", why, h.To, err))
	}
	e.spend.refreshUsage(ctx, r, true) // usage.go: the old agent's spend to the end, before its records are left behind
	if err := e.runner(r).Stop(ctx, r); err != nil {
		e.log.WarnContext(ctx, "stop the agent for a fallback", "run", r.ID, "err", err)
		return pause(fmt.Sprintf("%s; %s could not be stopped (%v): the run pauses instead of going to %s", why, h.From, err, h.To))
	}
	h.At = e.o.Now()
	if u := r.State.Usage; u != nil {
		c := *u
		h.Usage = &c
	}
	f.Pending = nil
	f.Handovers = append(f.Handovers, h)
	r.Agent, r.Runner = h.To, runnerOf(prof)
	handOver(r) // the old runner forgot what it saw of the agent when it stopped it
	e.event(ctx, r, EventFallback, fmt.Sprintf("%s (more than agent.fallback_after, %s, away): handed the run to %s, "+
		"which continues in the same working copy (%s)", why, e.cfg.Agent.FallbackAfter.Duration, h.To, handoverFile))
	detail := ""
	if h.Message != "" {
		detail = fmt.Sprintf("%s said:\n\n%s", h.From, quote(h.Message))
	}
	view := statusView{Status: store.StatusActive, Detail: detail,
		Headline: fmt.Sprintf("%s; handed over to %s, which continues in the same working copy", why, h.To)}
	if err := e.status.postStatus(ctx, r, view); err != nil {
		e.log.WarnContext(ctx, "status comment of a run handed over", "run", r.ID, "err", err)
	}
	return Goto(StepStartSession).With(store.StatusActive), nil
}
