package queue

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aceworks/ace/pkg/workflow"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// OnceReport says what one `ace poll --once` pass did.
type OnceReport struct {
	Visited int // job visits this pass made
	Left    int // jobs still due when the pass ended at its bound
}

// startupSteps are the steps before an agent has its prompt: a pass (cron's ace poll --once) keeps a new run going
// through them rather than leaving an agent without its task until the next pass. ask_human is with them: a
// question decided in the pass is posted in it, not left unasked until the next.
var startupSteps = []workflow.Step{workflow.StepClaim, workflow.StepPrepare, workflow.StepWriteTask, workflow.StepStartSession,
	workflow.StepDeliver, workflow.StepAsk}

// Once is one pass for cron: it starts working, enqueues a dispatch, and returns when every job that was due has
// been visited once and every run it visited is past its start-up steps — or when bound has passed. Jobs other
// ace processes hold are theirs; a snoozed job due later waits for the next pass.
func (q *Queue) Once(ctx context.Context, bound time.Duration) (OnceReport, error) {
	var rep OnceReport
	events, unsubscribe := q.client.Subscribe(river.EventKindJobCompleted, river.EventKindJobSnoozed,
		river.EventKindJobFailed, river.EventKindJobCancelled)
	defer unsubscribe()
	if err := q.Start(ctx); err != nil {
		return rep, err
	}
	if err := q.Dispatch(ctx); err != nil {
		return rep, fmt.Errorf("enqueue dispatch: %w", err)
	}
	visited := map[int64]bool{}
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	look := time.NewTicker(100 * time.Millisecond)
	defer look.Stop()
	for {
		select {
		case ev := <-events:
			if ev != nil && ev.Job != nil {
				visited[ev.Job.ID] = true
				rep.Visited++
			}
		case <-look.C:
			left, err := q.due(ctx, visited)
			if err != nil {
				return rep, err
			}
			if left == 0 {
				return rep, nil
			}
		case <-deadline.C:
			left, err := q.due(ctx, visited)
			rep.Left = left
			return rep, err
		case <-ctx.Done():
			return rep, ctx.Err()
		}
	}
}

// due counts the jobs a pass still waits for: running ones, due ones not visited yet, and visited runs that are
// still starting up.
func (q *Queue) due(ctx context.Context, visited map[int64]bool) (int, error) {
	params := river.NewJobListParams().Queues(q.host, dispatchQueue).
		States(rivertype.JobStateAvailable, rivertype.JobStateRunning, rivertype.JobStatePending).First(1000)
	res, err := q.client.JobList(ctx, params)
	if err != nil {
		return 0, fmt.Errorf("list due jobs: %w", err)
	}
	now := time.Now()
	n := 0
	for _, j := range res.Jobs {
		switch {
		case j.State == rivertype.JobStateRunning:
			n++
		case !visited[j.ID]:
			if !j.ScheduledAt.After(now) {
				n++
			}
		case q.startingUp(ctx, j):
			n++
		}
	}
	return n, nil
}

func (q *Queue) startingUp(ctx context.Context, j *rivertype.JobRow) bool {
	a, ok := decodeRunArgs(j)
	if !ok {
		return false
	}
	r, err := q.st.LatestRun(ctx, a.Repo, a.Issue)
	return err == nil && !r.Status.Terminal() && slices.Contains(startupSteps, workflow.Step(r.Step))
}
