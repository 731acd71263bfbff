package workflow

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/runbox"
	"github.com/aceworks/ace/pkg/store"
)

// An agent that cannot reach its model (a gateway down, a port not forwarded, a name that does not resolve)
// does not stop: its CLI retries the API for minutes (claude's api_retry, codex's "Reconnecting...", gemini's
// "Retrying with backoff"), and to a watcher of its screen or its output it looks busy. The signs come from the
// run's runner — its CLI's own retry reports, read by its agent's adapter from its stream, screen or stderr — and
// from the box's proxy, which sees the connections to the model's endpoint fail (package runbox). They make the
// run's ReachState, which ace show, ace ls, the dashboard and the status comment show from the first sign on; it
// goes to a human on the issue after monitor.unreachable_after, or as soon as the CLI gives up — never to a
// timeout. A sign that the model answers again ends it.

// EventUnreachable: the agent cannot reach its model, or reaches it again.
const EventUnreachable EventKind = "unreachable"

// reach is the engine's part that follows an agent reaching its model.
type reach struct {
	core   reachCore
	status *reporter
	agent  *runAgent
	box    *runbox.Boxes  // the model's destination, as the agent's configuration names it
	cfg    *config.Config // monitor.unreachable_after
	now    func() time.Time
	log    *slog.Logger
}

// reachCore is what reach needs of the engine's core: the run's events.
type reachCore interface {
	event(ctx context.Context, r *store.Run, kind EventKind, msg string)
}

// reachSign is one sign that the agent cannot reach its model.
type reachSign struct {
	// retry is the CLI's attempt number, of max when it says (0: not said); failed counts the connections to the
	// model's endpoint that failed since it last worked (the box's proxy).
	retry, max, failed int
	// dest is the destination (host:port) when known, from what named it; err what was said of the failure.
	dest, from, err string
}

// note records a sign: the run's reach state starts or goes on (settle, after the visit, completes it and says a
// new one).
func (rc *reach) note(ctx context.Context, r *store.Run, s reachSign) {
	st := r.State.Reach
	if st == nil {
		st = &store.ReachState{Since: rc.now()}
		r.State.Reach = st
	}
	st.At = rc.now()
	if s.retry > 0 {
		st.Retries, st.Max = s.retry, s.max
	}
	if s.failed > 0 {
		st.Failed = s.failed
	}
	if s.dest != "" {
		st.Dest, st.From = s.dest, s.from
	}
	if s.err != "" {
		st.Error = runbox.Printable(strings.TrimSpace(s.err), 300)
	}
}

// settle completes the run's reach state once the visit's node returned (Engine.Step; was is the state before
// the visit), so that a runner's look only records the sign: the destination from the agent's configuration where
// no sign named it, what would mend it, and for a state the visit started, its event and the status comment
// saying so — a human looking at the issue sees why nothing happens.
func (rc *reach) settle(ctx context.Context, r *store.Run, was *store.ReachState) {
	st := r.State.Reach
	if st == nil || r.Status.Terminal() {
		return
	}
	rc.complete(r)
	if st == was {
		return
	}
	bound := rc.cfg.Monitor.UnreachableAfter.Duration
	rc.core.event(ctx, r, EventUnreachable, fmt.Sprintf("%s; ace asks on the issue if it still cannot in %s (monitor.unreachable_after)",
		ReachLine(r), bound))
	if err := rc.status.postStatus(ctx, r, statusView{Headline: "working, but " + ReachLine(r)}); err != nil {
		rc.log.WarnContext(ctx, "status comment", "run", r.ID, "err", err)
	}
}

// complete gives the run's reach state the destination from the agent's configuration where no sign named it,
// and what would mend it. A question about the state (ask) is worded from them.
func (rc *reach) complete(r *store.Run) {
	st := r.State.Reach
	if st.Dest == "" {
		st.Dest, st.From = rc.modelDest(r)
	}
	st.Hint = reachHint(st)
}

// answered ends the run's reach state: the model answers again.
func (rc *reach) answered(ctx context.Context, r *store.Run) {
	st := r.State.Reach
	if st == nil {
		return
	}
	r.State.Reach = nil
	rc.core.event(ctx, r, EventUnreachable, fmt.Sprintf("%s reaches its model again (after %s)", r.Agent,
		rc.now().Sub(st.Since).Round(time.Second)))
}

// gate is the monitor's look at the reach state, before the runner's: an agent that has not reached its model
// for monitor.unreachable_after goes to a human. A state a human was asked about is over once the run is back at
// work (the human answered): the next sign starts it afresh.
func (rc *reach) gate(ctx context.Context, r *store.Run) (Result, bool, error) {
	st := r.State.Reach
	switch {
	case st == nil:
		return Result{}, false, nil
	case st.Asked:
		r.State.Reach = nil
		return Result{}, false, nil
	case rc.now().Sub(st.Since) < rc.cfg.Monitor.UnreachableAfter.Duration:
		return Result{}, false, nil
	}
	return rc.ask(r, "")
}

// gaveUp is the runner's word that the agent stopped trying (its turn ended, it sits at its prompt): while it
// could not reach its model, a human is to be asked at once, with what the agent showed last — not nudged, not
// restarted.
func (rc *reach) gaveUp(r *store.Run, lastWords string) (Result, bool, error) {
	if st := r.State.Reach; st == nil || st.Asked {
		return Result{}, false, nil
	}
	return rc.ask(r, lastWords)
}

// ask is the report that a human is to be asked about the agent not reaching its model, with screen.
func (rc *reach) ask(r *store.Run, screen string) (Result, bool, error) {
	st := r.State.Reach
	q := fmt.Sprintf("%s, for %s.", ReachLine(r), rc.now().Sub(st.Since).Round(time.Second))
	if st.Hint != "" {
		q += "\n\n" + st.Hint
	}
	q += "\n\nOnce it answers, reply here: ace passes your reply to the agent, which keeps trying meanwhile."
	return askFor(q, screen).then(func() { st.Asked = true }), true, nil // the node asks (Engine.reported)
}

// fromBox takes in what the run's proxy saw of the model (runbox.Boxes.Keep): a connection that worked ends the
// reach state; the model's endpoint failing twice or more since it last worked is a sign. Only while the agent
// works: the steps before it start, and a wait for a human, have nothing to say of it.
func (rc *reach) fromBox(ctx context.Context, r *store.Run, seen runbox.Seen) {
	if seen.Answered && len(seen.Failing) == 0 {
		rc.answered(ctx, r)
		return
	}
	if Step(r.Step) != StepMonitor || r.Status != store.StatusActive {
		return
	}
	var worst *runbox.Failure
	for i, f := range seen.Failing {
		if f.N >= 2 && (worst == nil || f.N > worst.N) {
			worst = &seen.Failing[i]
		}
	}
	if worst != nil {
		rc.note(ctx, r, reachSign{failed: worst.N, dest: worst.Dest, from: seen.Named[worst.Dest], err: worst.Err})
	}
}

// modelDest is the destination the run's agent sends its model requests to, as its configuration names it.
func (rc *reach) modelDest(r *store.Run) (dest, from string) {
	prof, err := rc.agent.profile(r)
	if err != nil {
		return "", ""
	}
	return rc.box.ModelDest(prof)
}
