package workflow

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/runbox"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tracker"
)

// followThrough follows a run's pull request until it is merged or closed: it collects a round's reviews, CI
// failures and /ace commands and gives them to the agent.
type followThrough struct {
	core    followCore
	tracker followTracker
	prs     tracker.PRReader // nil: the tracker reads no pull requests
	status  *reporter
	humans  *humans // who may ask for a round
	memory  *memoryKeeper
	slots   *slots // a round for a released agent takes a slot (sent.go)
	box     *runbox.Boxes
	cfg     *config.Config // [pr], the labels, the trigger
	now     func() time.Time
	log     *slog.Logger
}

// followCore is what following a pull request needs of the engine's core: the run's events, the files it cannot
// go on without, its runner (a round delivered, the agent stopped) and the node's one place to act on what the
// runner reports.
type followCore interface {
	event(ctx context.Context, r *store.Run, kind EventKind, msg string)
	needFile(ctx context.Context, r *store.Run, what string, err error) error
	runner(r *store.Run) Runner
	reported(ctx context.Context, r *store.Run, res Result, err error) (Result, error)
	removeWork(ctx context.Context, r *store.Run) (removed bool, err error) // the run's working copy (engine_files.go)
}

// followTracker is the tracker as following uses it, its pull requests aside (prs): the comment for a human,
// and who ace is there.
type followTracker interface {
	CreateComment(ctx context.Context, repo string, number int, body string) (*tracker.Comment, error)
	Self(ctx context.Context) (string, error)
}

// followFile holds a round's details (full check output, log tail, diff hunks) in the working copy; like all of
// .ace/ it is git-excluded.
const followFile = ".ace/FOLLOWUP.md"

// workspaceRemover is a Workspaces that can delete a working copy (the workspace manager).
type workspaceRemover interface {
	Remove(ctx context.Context, repo string, issue int) error
}

// prReader returns the tracker's pull request reader when following is on and the tracker can read one.
func (ft *followThrough) prReader(r *store.Run) (tracker.PRReader, bool) {
	if !ft.cfg.PR.Follow || r.PRNumber == 0 {
		return nil, false
	}
	return ft.prs, ft.prs != nil
}

// cloneFollow copies the follow state: the engine saves a run when its fields differ from before the visit,
// so the state is replaced, never changed in place.
func cloneFollow(f *store.FollowState) *store.FollowState {
	if f == nil {
		return &store.FollowState{}
	}
	c := *f
	c.Failures = maps.Clone(f.Failures)
	c.Tried = slices.Clone(f.Tried)
	return &c
}
