package workflow

import (
	"context"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/headless"
	"github.com/aceworks/ace/pkg/livehost"
	"github.com/aceworks/ace/pkg/store"
)

// What each runner reads of its CLI retrying its model's API (reach.go): the retry line on a tmux screen, the
// retry a headless turn's supervisor read from the stream or stderr, the retry records of a live conversation.
// Each says when the model answers again (the model's own words in a stream or a conversation), and when the agent
// gave up (a turn ended, a composer idle) while it could not reach it. A busy screen is no answer (gemini shows
// "Thinking..." while it retries): a reach state the box's proxy made (Failed) then ends only with a connection
// that worked.

// retryOnScreen reads the tmux screen o: the CLI's retry line is a sign; the agent at work without one answers
// again; the agent idle at its prompt (for monitor.settle) after failing to reach its model gave up.
func (t *tmuxRunner) retryOnScreen(ctx context.Context, r *store.Run, prof agents.Profile, o *observed, activity time.Time) (Result, bool, error) {
	if rt, ok := prof.RetryOnScreen(o.screen); ok {
		t.reach.note(ctx, r, reachSign{retry: rt.Attempt, max: rt.Max, err: rt.Error})
		return Result{}, false, nil
	}
	st := r.State.Reach
	if st == nil || st.Asked {
		return Result{}, false, nil
	}
	switch o.state {
	case agents.StateBusy:
		if st.Failed == 0 {
			t.reach.answered(ctx, r)
		}
	case agents.StateReady:
		// Still for a while (the pane too: a screen read before the CLI's spinner started is stale).
		if t.now().Sub(latest(o.changedAt, activity)) >= t.cfg.Monitor.Settle.Duration {
			return t.reach.gaveUp(r, o.screen)
		}
	}
	return Result{}, false, nil
}

// retryInTurn reads a headless turn's status: the supervisor's retry is a sign; the model's answer after it ends
// the reach state.
func (x *execRunner) retryInTurn(ctx context.Context, r *store.Run, st *headless.Status) {
	switch {
	case st == nil:
	case st.Retry != nil:
		x.reach.note(ctx, r, reachSign{retry: st.Retry.Attempt, max: st.Retry.Max, err: st.Retry.Error})
	case st.Answered && r.State.Reach != nil && !r.State.Reach.Asked:
		x.reach.answered(ctx, r)
	}
}

// retryRecord reads one record of a live conversation's transcript: a retry is a sign; the model's text or tool
// call is its answer; a turn that ends while it could not be reached is the agent giving up.
func (l *liveRunner) retryRecord(ctx context.Context, r *store.Run, rec livehost.Record) (Result, bool, error) {
	st := r.State.Reach
	switch rec.Kind {
	case livehost.KindRetry:
		l.reach.note(ctx, r, reachSign{retry: rec.Attempt, max: rec.Max, err: rec.Text})
	case livehost.KindText, livehost.KindToolCall:
		if st != nil && !st.Asked {
			l.reach.answered(ctx, r)
		}
	case livehost.KindTurnDone:
		if rec.Status == "completed" {
			if st != nil && !st.Asked {
				l.reach.answered(ctx, r) // a turn the model completed: it was reached
			}
			break
		}
		if st != nil && !st.Asked {
			// The state may have started with a retry of this visit, and is completed only after it (settle):
			// the question is worded from it completed.
			l.reach.complete(r)
		}
		return l.reach.gaveUp(r, rec.Text)
	}
	return Result{}, false, nil
}
