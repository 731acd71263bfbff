package workflow

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aceworks/ace/pkg/store"
)

// claimTTL is how long a claim outlives a process that stopped renewing it (killed, machine lost).
const claimTTL = 2 * time.Minute

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
}

// Acquire takes the issue's claim for this process and keeps it renewed until release is called. A claim left by
// a dead ace process on this host is taken over at once; one held by a live process is ErrBusy.
func (e *Engine) Acquire(ctx context.Context, repo string, issue int) (release func(), err error) {
	if err := e.claimIssue(ctx, repo, issue); err != nil {
		return nil, err
	}
	renewCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(claimTTL / 4)
		defer t.Stop()
		for {
			select {
			case <-renewCtx.Done():
				return
			case <-t.C:
				if err := e.o.Store.RenewClaim(renewCtx, repo, issue, e.o.Owner, claimTTL); err != nil {
					e.log.Warn("renew claim", "repo", repo, "issue", issue, "err", err)
				}
			}
		}
	}()
	return func() {
		stop()
		<-done
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := e.o.Store.ReleaseClaim(rctx, repo, issue, e.o.Owner); err != nil {
			e.log.Warn("release claim", "repo", repo, "issue", issue, "err", err)
		}
	}, nil
}

// claimIssue takes the issue's claim for this process once (no renewal): ErrBusy when a live process holds it.
func (e *Engine) claimIssue(ctx context.Context, repo string, issue int) error {
	ok, err := e.o.Store.Claim(ctx, repo, issue, e.o.Owner, claimTTL)
	if err != nil {
		return fmt.Errorf("claim %s#%d: %w", repo, issue, err)
	}
	if ok {
		return nil
	}
	holder, _, herr := e.o.Store.ClaimHolder(ctx, repo, issue)
	if herr != nil || !deadLocalOwner(holder) {
		return fmt.Errorf("%s#%d is held by %s: %w", repo, issue, holder, ErrBusy)
	}
	e.log.InfoContext(ctx, "taking over the claim of a dead ace process", "repo", repo, "issue", issue, "holder", holder)
	if err := e.o.Store.ReleaseClaim(ctx, repo, issue, holder); err != nil {
		return fmt.Errorf("release stale claim of %s: %w", holder, err)
	}
	if ok, err = e.o.Store.Claim(ctx, repo, issue, e.o.Owner, claimTTL); err != nil || !ok {
		return errors.Join(fmt.Errorf("claim %s#%d: %w", repo, issue, ErrBusy), err)
	}
	return nil
}

// deadLocalOwner reports whether a claim owner "<host>:<pid>" is a process of this host that no longer exists.
func deadLocalOwner(owner string) bool {
	host, pidText, ok := strings.Cut(owner, ":")
	me, _ := os.Hostname()
	if !ok || host != me {
		return false
	}
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 {
		return false
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// Open returns the run to drive for req: the latest unfinished run of the issue (resumed where it stopped), or a
// new attempt when there is none or req.NewAttempt is set and the latest has ended. The caller holds the claim.
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
	agent := req.Agent
	if agent == "" {
		agent = e.cfg.Agent.Default
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
		State:       store.RunState{Model: req.Model},
	}
	if latest != nil {
		// A retry continues on the same branch and working copy.
		r.Attempt = latest.Attempt + 1
		r.Branch = latest.Branch
		r.BaseBranch = latest.BaseBranch
		r.StatusCommentID = latest.StatusCommentID
	}
	if err := e.o.Store.CreateRun(ctx, r); err != nil {
		return nil, fmt.Errorf("create run for %s#%d: %w", req.Repo, req.Issue, err)
	}
	e.event(ctx, r, "created", fmt.Sprintf("attempt %d with agent %s", r.Attempt, r.Agent))
	return r, nil
}
