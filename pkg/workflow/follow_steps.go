package workflow

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tracker"
)

// followThrough's steps, which the graph's nodes call (follow_pr, report, prepare), and ace send and a failed
// verify: a round started (its file written, its prompt delivered), a human asked, the follow ended. They sit
// above the round's collection (follow_round.go); follow.go holds the part and what it uses.

// reportFollow is report's turn when the pull request is followed: the first time it starts following; after
// a round, it says the round was pushed. The session and working copy stay.
func (ft *followThrough) reportFollow(ctx context.Context, r *store.Run) (Result, bool, error) {
	if _, ok := ft.prReader(r); !ok {
		return Result{}, false, nil
	}
	f := cloneFollow(r.State.Follow)
	headline := "pull request opened: " + r.PRURL + " — following it until it is merged"
	if f.InRound {
		headline = fmt.Sprintf("round %d/%d pushed to %s (%s); following the pull request", f.Rounds, ft.cfg.PR.MaxRounds,
			r.PRURL, f.Topic)
		// A round that pushed nothing new leaves the head as it was: its failures are looked at again (and a
		// check failing the same way twice goes to a human).
		f.HandledSHA = ""
	}
	f.InRound, f.Prompt = false, ""
	f.QuietSince = ft.now() // pr.release_after counts from here
	r.State.Follow = f
	if err := ft.status.postStatus(ctx, r, statusView{Headline: headline}); err != nil {
		return Result{}, true, trackerErr(err)
	}
	ft.core.event(ctx, r, EventFollow, headline)
	return Goto(StepFollowPR), true, nil
}

// startRound hands the agent a round: .ace/DONE removed, the details in .ace/FOLLOWUP.md, a one-line prompt. A
// run with no working copy here keeps the details for the copy startAfresh has made.
func (ft *followThrough) startRound(ctx context.Context, r *store.Run, f *store.FollowState, pr *tracker.PRState, rd *round) (Result, error) {
	here := hasWorkCopy(r)
	if here {
		if err := removeProtocolFile(r, doneFile); err != nil {
			return Result{}, ft.core.needFile(ctx, r, "start the round", err)
		}
		if err := ft.writeFollowFile(r, rd.details()); err != nil {
			return Result{}, ft.core.needFile(ctx, r, "write "+followFile, err)
		}
	} else {
		f.Details = rd.details()
	}
	f.Rounds++
	f.InRound = true
	f.HandledSHA = pr.HeadSHA
	f.Topic = strings.Join(rd.topics, "; ")
	f.Tried = append(f.Tried, fmt.Sprintf("round %d: %s", f.Rounds, f.Topic))
	if f.Failures == nil {
		f.Failures = map[string]string{}
	}
	maps.Copy(f.Failures, rd.digests)
	f.Prompt = ft.roundPrompt(r, f, rd)
	r.State.Follow = f
	r.State.Summary = ""
	r.Nudges, r.State.NudgedAt = 0, time.Time{}
	headline := fmt.Sprintf("round %d/%d on %s: %s", f.Rounds, ft.cfg.PR.MaxRounds, r.PRURL, f.Topic)
	ft.core.event(ctx, r, EventRound, headline)
	if err := ft.status.postStatus(ctx, r, statusView{Headline: headline}); err != nil {
		ft.log.WarnContext(ctx, "status comment", "run", r.ID, "err", err) // the round matters more than its report
	}
	if !here {
		return ft.startAfresh(ctx, r)
	}
	return ft.deliverRound(ctx, r)
}

// startAfresh takes a round of a run with no working copy here — it moved from a host that stopped answering
// (MoveRun) — where a run moved at any other step goes: prepare_workspace makes the copy from the pull request's
// branch, write_task writes ACE_TASK.md and the round's file (writeRoundFile), start_session starts a new agent, whose
// first prompt (the resume prompt) carries the task and the round. The old agent's conversation stayed behind.
func (ft *followThrough) startAfresh(ctx context.Context, r *store.Run) (Result, error) {
	ft.core.event(ctx, r, EventSession, fmt.Sprintf("no working copy here: the run moved, and its agent's conversation stayed "+
		"on the host it moved from; a new agent starts the round in a working copy made from %s, told the task and the round", r.Branch))
	r.State.DropAgent() // nothing of an agent process here; the next start is told to continue (Resume)
	return Goto(StepPrepare), nil
}

// deliverRound gives the round's prompt to the agent (deliverFollowUp).
func (ft *followThrough) deliverRound(ctx context.Context, r *store.Run) (Result, error) {
	return ft.deliverFollowUp(ctx, r, r.State.Follow.Prompt, fmt.Sprintf("follow-up round %d delivered", r.State.Follow.Rounds))
}

// deliverFollowUp gives a round's prompt (a pull request's, a failed verify's) to the agent: typed into its
// session, queued as the next turn of a headless conversation, or — when the agent is gone — with a restart in
// the same working copy, whose resume prompt says what the round is about. delivered is the event's message.
func (ft *followThrough) deliverFollowUp(ctx context.Context, r *store.Run, prompt, delivered string) (Result, error) {
	r.State.MonitorSince = ft.now()
	res, err := ft.core.runner(r).FollowUp(ctx, r, prompt, delivered)
	return ft.core.reported(ctx, r, res, err)
}

// needsHuman stops sending rounds: the issue gets the needs-human label and a comment saying what was tried.
// The pull request is still followed, so a merge or close still ends the run.
func (ft *followThrough) needsHuman(ctx context.Context, r *store.Run, why string) (Result, error) {
	f := cloneFollow(r.State.Follow)
	var b strings.Builder
	fmt.Fprintf(&b, "ace stopped working on %s: %s.\n\n", r.PRURL, why)
	if len(f.Tried) > 0 {
		b.WriteString("What ace tried:\n")
		for _, t := range f.Tried {
			b.WriteString("- " + flatten(t, 500) + "\n")
		}
	} else {
		b.WriteString("No follow-up round was sent.\n")
	}
	fmt.Fprintf(&b, "\nThe working copy and the agent's session are kept (`ace attach %d`). ace still follows the pull "+
		"request and ends the run when it is merged or closed.\n", r.Issue)
	if err := ft.status.setLabels(ctx, r, []string{ft.cfg.PR.NeedsHumanLabel}); err != nil {
		return Result{}, trackerErr(err)
	}
	if _, err := ft.tracker.CreateComment(ctx, r.Repo, r.Issue, b.String()); err != nil {
		return Result{}, trackerErr(fmt.Errorf("ask for a human: %w", err))
	}
	f.NeedsHuman = true
	r.State.Follow = f
	headline := "needs a human: " + why
	ft.core.event(ctx, r, EventNeedsHuman, headline)
	if err := ft.status.postStatus(ctx, r, statusView{Headline: headline}); err != nil {
		ft.log.WarnContext(ctx, "status comment", "run", r.ID, "err", err)
	}
	return Stay(ft.cfg.Poll.Interval.Duration), nil
}

// endFollow ends a followed run: merged is its success (done), closed unmerged ends it closed. Either way the
// agent's session and the working copy are removed.
func (ft *followThrough) endFollow(ctx context.Context, r *store.Run, merged bool) (Result, error) {
	if err := ft.core.runner(r).Stop(ctx, r); err != nil { // the agent and everything it started
		return Result{}, err
	}
	rounds := 0
	if r.State.Follow != nil {
		rounds = r.State.Follow.Rounds
	}
	outcome, status := "closed without merge", store.StatusClosed
	headline := fmt.Sprintf("closed: the pull request was closed without being merged; the %q label was removed (add it again "+
		"to start over)", ft.cfg.Trigger.Label)
	if merged {
		outcome, status = fmt.Sprintf("merged after %d rounds", rounds), store.StatusDone
		headline = fmt.Sprintf("done — pull request %s merged after %d follow-up round(s)", r.PRURL, rounds)
	}
	ft.memory.remember(ctx, r, outcome)
	l := ft.cfg.Labels
	add, remove := []string{l.Done}, []string{l.Running, l.NeedsInput, ft.cfg.PR.NeedsHumanLabel}
	if !merged {
		// A human closed the pull request: the issue must not be picked up again by the next poll.
		add, remove = nil, append(remove, ft.cfg.Trigger.Label)
	}
	if err := ft.status.setLabels(ctx, r, add, remove...); err != nil {
		return Result{}, trackerErr(err)
	}
	if err := ft.status.postStatus(ctx, r, statusView{Status: status, Headline: headline}); err != nil {
		return Result{}, trackerErr(err)
	}
	if r.Workdir != "" {
		if removed, err := ft.core.removeWork(ctx, r); err != nil {
			ft.log.WarnContext(ctx, "remove the working copy", "run", r.ID, "err", err)
		} else if removed {
			ft.core.event(ctx, r, EventCleaned, "removed the working copy "+r.Workdir)
			ft.box.Remove(ctx, r) // and the agent's home for the run, if it was boxed
		}
	}
	now := ft.now()
	r.FinishedAt = &now
	if merged {
		return Goto(StepDone).With(store.StatusDone), nil
	}
	return Goto(StepFollowPR).With(store.StatusClosed), nil
}

// writeRoundFile writes the round's .ace/FOLLOWUP.md into a working copy made for it (write_task, after
// startAfresh): the details startRound kept — or, for a run that moved in the middle of a round, whose details
// stayed with the old copy, what the round is about and where its pull request is, as the round's prompt points there.
func (ft *followThrough) writeRoundFile(r *store.Run) error {
	f := r.State.Follow
	switch {
	case f == nil || !f.InRound:
		return nil
	case f.Details != "":
		if err := ft.writeFollowFile(r, f.Details); err != nil {
			return err
		}
		f = cloneFollow(f)
		f.Details = ""
		r.State.Follow = f
		return nil
	case workCopy(r).Exists(followFile):
		return nil
	}
	return ft.writeFollowFile(r, fmt.Sprintf("# Follow-up on your pull request\n\nThis file was written by ace; it is not "+
		"part of the repository. This round began on another host, and its details (full check output, the end of the job "+
		"log, diff hunks) stayed there with its working copy. The round is about: %s. Pull request %s has the checks and "+
		"reviews.\n", flatten(f.Topic, 1000), r.PRURL))
}

func (ft *followThrough) writeFollowFile(r *store.Run, text string) error {
	wc := workCopy(r)
	if err := wc.MkdirAll(".ace", 0o755); err != nil {
		return err
	}
	return wc.WriteFile(followFile, []byte(text), 0o644)
}
