package workflow

import (
	"context"
	"fmt"
	"strings"

	"github.com/aceworks/ace/pkg/store"
)

// After the pull request opens, the run waits at follow_pr: each visit reads the pull request (conditional
// requests: an unchanged one costs only 304s) and decides. Merged ends the run done, closed ends it closed; a
// failed check, a review asking for changes, a conflict or a trusted `/ace ` comment starts a round: the agent
// gets a follow-up, works in the same working copy and session, writes .ace/DONE again, and finalize pushes to
// the same branch. Everything ace reacted to is remembered in the run (store.FollowState), so nothing is sent
// twice.

// followPR is one look at the pull request.
func (e *Engine) followPR(ctx context.Context, r *store.Run) (Result, error) {
	poll := e.cfg.Poll.Interval.Duration
	reader, ok := e.follow.prReader(r)
	if !ok {
		return Goto(StepReport), nil // following was turned off: end the run as before
	}
	pr, err := reader.PRState(ctx, r.Repo, r.PRNumber)
	if err != nil {
		// A tracker outage must not end a run that only waits; look again next time.
		e.log.WarnContext(ctx, "read the pull request", "repo", r.Repo, "pr", r.PRNumber, "err", err)
		return Stay(poll), nil
	}
	f := cloneFollow(r.State.Follow)
	f.CheckedAt = e.o.Now()
	r.State.Follow = f
	switch {
	case pr.Merged:
		return e.follow.endFollow(ctx, r, true)
	case pr.State == "closed":
		return e.follow.endFollow(ctx, r, false)
	case f.InRound:
		// Back from a round before it was pushed: the monitor saw the issue closed (but the pull request is
		// open), or the follow-up could not be delivered yet.
		if iss, err := e.o.Tracker.Issue(ctx, r.Repo, r.Issue); err == nil && iss.State == "closed" {
			r.Error = "the issue was closed"
			return Goto(StepCancelled), nil
		}
		if !hasWorkCopy(r) {
			return e.follow.startAfresh(ctx, r) // moved here before the round reached its agent
		}
		return e.follow.deliverRound(ctx, r)
	}
	if text := sentWaiting(r); text != "" {
		return e.follow.sentRound(ctx, r, f, text) // sent.go: text for its released agent
	}
	before := cloneFollow(f) // what a round that must wait for a slot leaves as it was, to be collected again
	rd, err := e.follow.collectRound(ctx, r, f, pr)
	if err != nil {
		return Result{}, err
	}
	if rd.empty() || f.NeedsHuman {
		return Stay(poll), nil // its idle agent is kept until its slot is needed, or pr.release_after (slots.go)
	}
	if rd.repeated == "" && f.Rounds < e.cfg.PR.MaxRounds {
		// A round works: the agent takes its slot back — its idle one, or one free or given up by an idle agent.
		ok, err := e.slots.acquire(ctx, r)
		if err != nil {
			return Result{}, err
		}
		if !ok {
			before.CheckedAt = f.CheckedAt
			r.State.Follow = before
			return Stay(e.slots.slotWait()), nil
		}
	}
	if rd.repeated != "" {
		return e.follow.needsHuman(ctx, r, rd.repeated)
	}
	if f.Rounds >= e.cfg.PR.MaxRounds {
		return e.follow.needsHuman(ctx, r, fmt.Sprintf("the pull request needs more work (%s), and ace used all %d follow-up rounds "+
			"(pr.max_rounds)", strings.Join(rd.topics, "; "), e.cfg.PR.MaxRounds))
	}
	return e.follow.startRound(ctx, r, f, pr, rd)
}
