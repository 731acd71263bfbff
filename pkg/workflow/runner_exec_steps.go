package workflow

import (
	"context"
	"fmt"

	"github.com/aceworks/ace/pkg/store"
)

// The headless runner's steps: what the graph's nodes call (Runner). They sit above the turns, the supervisor's
// files and liveness they use; runner_exec.go holds the runner's parts and describes a run of it.

func (x *execRunner) Start(ctx context.Context, r *store.Run) (Result, error) {
	return x.startExec(ctx, r)
}

// Deliver: the task is the first turn's prompt, which Start gives.
func (x *execRunner) Deliver(ctx context.Context, r *store.Run) (Result, error) {
	return x.startExec(ctx, r)
}

func (x *execRunner) Busy(ctx context.Context, r *store.Run) (Result, bool, error) {
	return x.execRunning(ctx, r)
}

func (x *execRunner) Observe(ctx context.Context, r *store.Run) (Result, error) {
	return x.execTurnEnded(ctx, r)
}

func (*execRunner) Queue(r *store.Run, text string) { queueExec(r, text) }

func (*execRunner) FollowUp(_ context.Context, r *store.Run, prompt, _ string) (Result, error) {
	queueExec(r, prompt)
	return Goto(StepMonitor), nil
}

// Continue queues msg as the next turn, unless a turn is running already.
func (x *execRunner) Continue(ctx context.Context, r *store.Run, msg string) error {
	if ls := r.State.Limit; ls != nil && ls.StartOver {
		msg = x.prompts.taskPrompt(r) // nothing to continue: a new conversation gets the task (execTurn)
	}
	if !x.execAlive(ctx, r) {
		queueExec(r, msg)
	}
	return nil
}

func (x *execRunner) Stop(ctx context.Context, r *store.Run) error { return x.endExec(ctx, r) }

func (x *execRunner) Working(ctx context.Context, r *store.Run) bool { return x.execAlive(ctx, r) }

// Live: a headless run has no session to type into, only a conversation to continue with a new turn.
func (x *execRunner) Live(ctx context.Context, r *store.Run) error {
	if r.AgentSessionID == "" && !x.execAlive(ctx, r) {
		return fmt.Errorf("%s#%d (no headless conversation yet): %w", r.Repo, r.Issue, ErrNoSession)
	}
	return nil
}

func (*execRunner) Screen(_ context.Context, r *store.Run, _ int) (string, error) {
	return "", fmt.Errorf("%s#%d: %w", r.Repo, r.Issue, ErrHeadless)
}
