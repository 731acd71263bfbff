package workflow

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
)

// Request names the issue a run is for.
type Request struct {
	Repo  string
	Issue int
	// Agent overrides agent.default (from --agent or an ace:agent:<name> label).
	Agent string
	// Model overrides the profile's model (from an ace:model:<name> label).
	Model string
	// NewAttempt starts attempt N+1 when the latest run has ended; an unfinished run is always resumed.
	NewAttempt bool
	// TriggeredAt is when the run was asked for; issue comments after it are left out of ACE_TASK.md.
	TriggeredAt time.Time
	// Host is the host the new run goes to (dispatch picks the least loaded); default this one.
	Host string
}

// Open returns the run for req: the latest unfinished run of the issue (resumed where it stopped), or a new
// attempt when there is none or req.NewAttempt is set and the latest has ended. Two processes opening the same
// issue at once (a foreground ace run, a dispatch pass) get the same run: the store accepts one run per attempt.
func (e *Engine) Open(ctx context.Context, req Request) (*store.Run, error) {
	latest, err := e.o.Store.LatestRun(ctx, req.Repo, req.Issue)
	switch {
	case errors.Is(err, store.ErrNotFound):
		latest = nil
	case err != nil:
		return nil, fmt.Errorf("look up runs of %s#%d: %w", req.Repo, req.Issue, err)
	case !latest.Status.Terminal():
		return latest, nil
	case !req.NewAttempt:
		return latest, nil
	}
	agent, auto := req.Agent, ""
	if agent == "" {
		agent = e.cfg.Agent.Default
	}
	if agent == config.AgentAuto {
		agent, auto = e.autoAgent(ctx, req.Repo)
	}
	prof, err := e.o.Profile(agent)
	if err != nil {
		return nil, fmt.Errorf("agent %q: %w", agent, err)
	}
	triggered := req.TriggeredAt
	if triggered.IsZero() {
		triggered = e.o.Now()
	}
	r := &store.Run{
		Repo:        req.Repo,
		Issue:       req.Issue,
		Attempt:     1,
		Agent:       agent,
		Runner:      runnerOf(prof),
		Step:        string(StepClaim),
		Status:      store.StatusActive,
		TriggeredAt: triggered,
		Host:        cmp.Or(req.Host, e.o.Host),
		State:       store.RunState{Model: req.Model, AgentAuto: auto},
		// It waits for a slot on its host from now: dispatch counts it there at once, and its first step takes
		// one (slots.go).
		Slot: store.SlotWait, SlotAt: e.o.Now(),
	}
	if latest != nil {
		// A retry continues on the same branch and working copy.
		r.Attempt = latest.Attempt + 1
		r.Branch = latest.Branch
		r.BaseBranch = latest.BaseBranch
		r.StatusCommentID = latest.StatusCommentID
	}
	if err := e.o.Store.CreateRun(ctx, r); err != nil {
		if other, lerr := e.o.Store.LatestRun(ctx, req.Repo, req.Issue); lerr == nil && other.Attempt >= r.Attempt {
			return other, nil // another process created this attempt a moment ago
		}
		return nil, fmt.Errorf("create run for %s#%d: %w", req.Repo, req.Issue, err)
	}
	what := fmt.Sprintf("attempt %d with agent %s", r.Attempt, r.Agent)
	if auto != "" {
		what += " (agent.default = \"auto\": " + auto + ")"
	}
	e.event(ctx, r, "created", what)
	return r, nil
}

// autoAgent is agent.default = "auto": the agent the repository's eval recommends, else agent.auto_otherwise, and
// why. An eval that cannot be read chooses nothing, as none would.
func (e *Engine) autoAgent(ctx context.Context, repo string) (agent, why string) {
	if e.o.ChooseAgent != nil {
		a, w, err := e.o.ChooseAgent(ctx, repo)
		if err != nil {
			e.log.WarnContext(ctx, "agent.default = auto: read the repository's eval", "repo", repo, "err", err)
			return e.cfg.Agent.AutoOtherwise, "its eval could not be read (" + err.Error() + "), so agent.auto_otherwise"
		}
		if _, err := e.o.Profile(a); a != "" && err != nil {
			return e.cfg.Agent.AutoOtherwise, fmt.Sprintf("its eval recommends %s, which is no agent here (%v), so agent.auto_otherwise", a, err)
		}
		if a != "" {
			return a, w
		}
	}
	return e.cfg.Agent.AutoOtherwise, fmt.Sprintf("no eval of %s recommends an agent with %d scored runs, so agent.auto_otherwise",
		repo, e.cfg.Agent.AutoMinRuns)
}
