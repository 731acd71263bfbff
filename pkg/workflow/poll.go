package workflow

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tracker"
)

// HostPicker chooses the host a new run goes to (the live host with the most free slots; ok false when none
// has one).
type HostPicker func(ctx context.Context, maxConcurrent int) (host string, ok bool, err error)

// dispatcher is one dispatch pass over the labelled issues of the repositories.
type dispatcher struct {
	core    dispatchCore
	tracker dispatchTracker
	store   dispatchStore
	limits  *usageLimits // an agent paused at a usage limit starts nothing
	humans  *humans      // who may start a run
	cfg     *config.Config
	now     func() time.Time

	pick HostPicker
	full bool // every live host is full: the issues left wait (queued)
	// listed are the repositories whose labelled issues this pass read, queued those it found no slot for.
	listed []string
	queued []store.Queued
}

// dispatchCore is what a dispatch pass needs of the engine's core: a new run opened and its job made due, and
// the agent and model an issue's labels ask for.
type dispatchCore interface {
	Open(ctx context.Context, req Request) (*store.Run, error)
	enqueue(ctx context.Context, r *store.Run) error
	labelChoice(labels []string) (agent, model string)
}

// dispatchTracker is the tracker as a dispatch pass uses it: the labelled issues, who labelled one, and the one
// comment to an untrusted labeller.
type dispatchTracker interface {
	ListLabeled(ctx context.Context, repo, label string) ([]tracker.Issue, error)
	Labeler(ctx context.Context, repo string, number int, label string) (string, error)
	FindComment(ctx context.Context, repo string, number int, marker string) (*tracker.Comment, error)
	CreateComment(ctx context.Context, repo string, number int, body string) (*tracker.Comment, error)
}

// dispatchStore is the store as a dispatch pass reads it: an issue's latest run, finished or not.
type dispatchStore interface {
	LatestRun(ctx context.Context, repo string, issue int) (*store.Run, error)
}

// newDispatcher is a dispatch pass of e's, giving new runs to the hosts pick chooses.
func newDispatcher(e *Engine, pick HostPicker) *dispatcher {
	return &dispatcher{core: e, tracker: e.o.Tracker, store: e.o.Store, limits: e.limits, humans: e.humans, cfg: e.cfg,
		now: e.o.Now, pick: pick}
}

// PollReport says what one poll pass did.
type PollReport struct {
	Ticked    int // active runs looked at
	Started   int // new runs started
	Skipped   int // labelled issues left alone (running, done, failed, busy elsewhere)
	Untrusted int // labelled by someone without the required permission
	Queued    int // labelled issues no host had a slot for: they wait (the queue)
	// OverBudget says why nothing was started: the day's budget (budget.day) is spent.
	OverBudget string
	Errors     []error
}

// untrustedMarker tags the one comment ace leaves when an untrusted user applies the trigger label.
const untrustedMarker = "<!-- ace:untrusted -->"

// DispatchRepos starts runs for the labelled issues of repos, oldest first, up to maxConcurrent unfinished runs in
// total, and adds what it did to rep. Each new run is enqueued as a job: dispatch itself never waits on an agent.
func (e *Engine) DispatchRepos(ctx context.Context, repos []string, maxConcurrent int, pick HostPicker, rep *PollReport) error {
	d := newDispatcher(e, pick)
	// The day's budget is looked at once per pass, for every repository (budget.go).
	if over, spentToday, until, err := e.spend.dayBudgetReached(ctx); err != nil || over {
		if over {
			rep.OverBudget = fmt.Sprintf("today's runs spent %s (budget.day): no new run until %s", spentToday, until.Format(time.RFC3339))
			e.log.WarnContext(ctx, "daily budget reached", "spent", spentToday, "until", until)
		}
		return err
	}
	for _, repo := range repos {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err := d.dispatch(ctx, repo, maxConcurrent, rep); err != nil {
			rep.Errors = append(rep.Errors, fmt.Errorf("%s: %w", repo, err))
		}
	}
	// The queue: what waits for a slot, and since when (ace hosts, ace ls, the dashboard, /metrics).
	if err := e.o.Store.SetQueue(ctx, d.listed, d.queued); err != nil {
		rep.Errors = append(rep.Errors, fmt.Errorf("record the queue: %w", err))
	}
	return nil
}

// resumeWaiting puts a run that waits for a human back at the step that relays the answer, whatever step it
// was saved at (by an ace from before transition checked that a status fits its step).
func resumeWaiting(r *store.Run) {
	if r.Status == store.StatusWaitingInput && Step(r.Step) != StepWaitingInput {
		_, _ = transition(r, StepWaitingInput, "") // saved with the visit that follows
	}
}

// dispatch starts runs for the open issues of repo that carry the trigger label and are not taken yet.
func (d *dispatcher) dispatch(ctx context.Context, repo string, maxConcurrent int, rep *PollReport) error {
	issues, err := d.tracker.ListLabeled(ctx, repo, d.cfg.Trigger.Label)
	if err != nil {
		return fmt.Errorf("list issues labelled %s: %w", d.cfg.Trigger.Label, err)
	}
	sort.SliceStable(issues, func(i, j int) bool { return issues[i].CreatedAt.Before(issues[j].CreatedAt) })
	d.listed = append(d.listed, repo)
	l := d.cfg.Labels
	for _, iss := range issues {
		if iss.IsPR || iss.State == "closed" {
			continue
		}
		if hasAny(iss.Labels, l.Running, l.Done, l.Failed) {
			rep.Skipped++
			continue
		}
		latest, err := d.store.LatestRun(ctx, repo, iss.Number)
		if err == nil && !latest.Status.Terminal() {
			rep.Skipped++ // its job advances it
			continue
		}
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if d.full {
			d.queued = append(d.queued, store.Queued{Repo: repo, Issue: iss.Number})
			rep.Queued++
			continue
		}
		host, ok, err := d.pick(ctx, maxConcurrent) // free slots: those neither working nor waited for (slots.go)
		if err != nil {
			return err
		}
		if !ok {
			d.full = true // every live host is full: this issue and the ones after it wait
			d.queued = append(d.queued, store.Queued{Repo: repo, Issue: iss.Number})
			rep.Queued++
			continue
		}
		paused, err := d.limits.agentPaused(ctx, repo, iss.Labels) // usage limits: limits.go
		if err != nil {
			return err
		}
		if paused {
			rep.Skipped++
			continue
		}
		ok, who, err := d.labelTrusted(ctx, repo, iss.Number)
		if err != nil {
			rep.Errors = append(rep.Errors, fmt.Errorf("%s#%d: %w", repo, iss.Number, err))
			continue
		}
		if !ok {
			rep.Untrusted++
			if err := d.explainUntrusted(ctx, repo, iss.Number, who); err != nil {
				rep.Errors = append(rep.Errors, err)
			}
			continue
		}
		if err := d.startFromLabel(ctx, iss, host); err != nil {
			rep.Errors = append(rep.Errors, fmt.Errorf("%s#%d: %w", repo, iss.Number, err))
			continue
		}
		rep.Started++
	}
	return nil
}

// startFromLabel opens a new run for a labelled issue and enqueues its job.
func (d *dispatcher) startFromLabel(ctx context.Context, iss tracker.Issue, host string) error {
	agent, model := d.core.labelChoice(iss.Labels)
	r, err := d.core.Open(ctx, Request{Repo: iss.Repo, Issue: iss.Number, Agent: agent, Model: model, NewAttempt: true, TriggeredAt: d.now(), Host: host})
	if err != nil {
		return err
	}
	return d.core.enqueue(ctx, r)
}

// labelChoice reads ace:agent:<name> and ace:model:<name> labels.
func (e *Engine) labelChoice(labels []string) (agent, model string) {
	for _, l := range labels {
		if v, ok := strings.CutPrefix(l, e.cfg.Labels.AgentPrefix); ok && e.cfg.Labels.AgentPrefix != "" {
			agent = v
		}
		if v, ok := strings.CutPrefix(l, e.cfg.Labels.ModelPrefix); ok && e.cfg.Labels.ModelPrefix != "" {
			model = v
		}
	}
	return agent, model
}

// labelTrusted checks who applied the trigger label.
func (d *dispatcher) labelTrusted(ctx context.Context, repo string, number int) (bool, string, error) {
	who, err := d.tracker.Labeler(ctx, repo, number, d.cfg.Trigger.Label)
	if err != nil {
		return false, "", trackerErr(fmt.Errorf("who labelled the issue: %w", err))
	}
	if who == "" {
		return false, "", nil
	}
	ok, err := d.humans.trustedUser(ctx, repo, who)
	return ok, who, err
}

// explainUntrusted leaves one comment (never a second) saying why ace does not start.
func (d *dispatcher) explainUntrusted(ctx context.Context, repo string, number int, who string) error {
	c, err := d.tracker.FindComment(ctx, repo, number, untrustedMarker)
	if err != nil || c != nil {
		return err
	}
	body := fmt.Sprintf("%s\n**ace** will not start on this issue: the `%s` label was applied by @%s, who does not have "+
		"`%s` permission on this repository (and is not in `trigger.allowed_users`). A maintainer can remove and re-apply the label.",
		untrustedMarker, d.cfg.Trigger.Label, who, d.cfg.Trigger.MinPermission)
	_, err = d.tracker.CreateComment(ctx, repo, number, body)
	return err
}

func hasAny(labels []string, want ...string) bool {
	for _, w := range want {
		if w != "" && slices.Contains(labels, w) {
			return true
		}
	}
	return false
}
